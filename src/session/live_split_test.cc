#include "session/live_split.h"

#include <gtest/gtest.h>

namespace trainprof::session {
namespace {

constexpr int64_t kMs = 1'000'000;

// A 100 ms window: data 20 ms, forward 30 ms (a nested forward counted once), backward 25 ms,
// optimizer 5 ms, a loop scope around all of it (not a split kind); other is the rest, 20 ms.
TEST(LiveSplitter, SharesOfTheWindowWithNestedScopesCountedOnce) {
  LiveSplitter split;
  split.Add(ActionKind::kDataLoader, 0, 20 * kMs);
  split.Add(ActionKind::kForward, 25 * kMs, 35 * kMs);  // a submodule's forward, inside
  split.Add(ActionKind::kForward, 20 * kMs, 50 * kMs);
  split.Add(ActionKind::kBackward, 50 * kMs, 75 * kMs);
  split.Add(ActionKind::kOptimizer, 75 * kMs, 80 * kMs);
  split.Add(ActionKind::kLoop, 0, 80 * kMs);
  const auto p = split.Take(100 * kMs);
  ASSERT_TRUE(p.has_value());
  EXPECT_NEAR(p->data_wait, 0.20, 1e-12);
  EXPECT_NEAR(p->forward, 0.30, 1e-12);
  EXPECT_NEAR(p->backward, 0.25, 1e-12);
  EXPECT_NEAR(p->optimizer, 0.05, 1e-12);
  EXPECT_DOUBLE_EQ(p->communication, 0);
  EXPECT_NEAR(p->other, 0.20, 1e-12);
}

// No scope of a split kind since the last tick: not measured, never "all other".
TEST(LiveSplitter, NothingRecordedIsNotMeasured) {
  LiveSplitter split;
  split.Add(ActionKind::kOther, 0, 10 * kMs);
  EXPECT_FALSE(split.Take(100 * kMs).has_value());
  split.Add(ActionKind::kCommunication, 0, 40 * kMs);
  const auto p = split.Take(50 * kMs);
  ASSERT_TRUE(p.has_value());
  EXPECT_NEAR(p->communication, 0.8, 1e-12);
  EXPECT_FALSE(split.Take(50 * kMs).has_value());  // the next window starts empty
}

}  // namespace
}  // namespace trainprof::session
