#include "session/rss_trend.h"

#include <gtest/gtest.h>

namespace trainprof::session {
namespace {

constexpr int64_t kS = 1'000'000'000;
constexpr double kMiB = 1 << 20;

// Issue 69: a 20 s run whose RSS grows 22 MiB at its start and then stays flat was told "memory
// creeps: RSS grows 67 MiB a minute". Start-up growth is not creep.
TEST(RssTrend, AShortRunIsNoCreep) {
  RssTrend t;
  for (int64_t s = 1; s <= 20; ++s) t.Add(s * kS, (s < 5 ? 100 + 5.5 * s : 122) * kMiB);
  EXPECT_FALSE(t.GrowthPerMinute().has_value());
}

// After the warm-up, a steady 10 MiB a minute over 90 s is told as such, over the last minute.
TEST(RssTrend, SteadyGrowthAfterTheWarmupIsTold) {
  RssTrend t;
  for (int64_t s = 0; s <= 40; ++s) t.Add(s * kS, 100 * kMiB);  // warm-up, then flat
  EXPECT_FALSE(t.GrowthPerMinute().has_value());                // 10 s after the warm-up: too short
  for (int64_t s = 41; s <= 130; ++s) t.Add(s * kS, (100 + (s - 40) * 10.0 / 60) * kMiB);
  ASSERT_TRUE(t.GrowthPerMinute().has_value());
  EXPECT_NEAR(*t.GrowthPerMinute() / kMiB, 10.0, 1e-9);
}

}  // namespace
}  // namespace trainprof::session
