// PyTorch's memory timeline export read into roles: rows built here with known answers, bad
// input named with its byte, and (with ../shared/data/snapshots beside the checkout) the real
// export of HTA's tests.
#include "snapshot/torch_timeline.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <numeric>

namespace trainprof::snapshot {
namespace timeline_test {

using memory::Role;

int64_t At(const DeviceMemory& d, Role r) { return d.roles.at_peak[static_cast<size_t>(r)]; }

// Weights (0) and state (1) existed before (time -1); an activation (4) made at 10 and freed at
// 40; a temporary (3) at 20-25; a gradient (5) made at 30. Peak 1000+500+300+50=1850 at 20; later
// 1000+500+300+200 = 2000 at 30 is higher.
constexpr const char* kRows =
    "[[-1, 1, 1000, 0], [-1, 1, 500, 1], [10, 2, 300, 4], [20, 2, 50, 3], [25, 4, -50, 3],"
    " [30, 2, 200, 5], [40, 4, -300, 4]]";

TEST(TorchTimeline, PyTorchsCategoriesAreTheRoles) {
  auto d = ReadTorchTimelineBytes(kRows, "t.raw");
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->events, 7);
  EXPECT_EQ(d->peak_allocated, 2000);
  EXPECT_EQ(At(*d, Role::kParameter), 1000);
  EXPECT_EQ(At(*d, Role::kOptimizerState), 500);
  EXPECT_EQ(At(*d, Role::kActivation), 300);
  EXPECT_EQ(At(*d, Role::kGradient), 200);
  EXPECT_EQ(At(*d, Role::kTemporary), 0);
  ASSERT_EQ(d->roles.rules.size(), 1u);
  EXPECT_EQ(d->roles.rules[0].first, memory::kTorchCategory);
  ASSERT_FALSE(d->roles.timeline.empty());
  const auto& end = d->roles.timeline.back().bytes;
  EXPECT_EQ(std::accumulate(end.begin(), end.end(), int64_t{0}), 1700);
}

TEST(TorchTimeline, BadRowsAreNamedWithTheirByte) {
  auto bad = ReadTorchTimelineBytes("[[1, 2, 3]]", "t.raw");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("t.raw: byte 9: expected a row"), std::string::npos)
      << bad.status().message();
  auto category = ReadTorchTimelineBytes("[[1, 2, 3, 9]]", "t.raw");
  ASSERT_FALSE(category.ok());
  EXPECT_NE(category.status().message().find("category 9"), std::string::npos);
}

TEST(TorchTimelineConformance, HtasExportReadsAsRolesThatSumToThePeak) {
  const std::string path =
      std::string(TRAINPROF_SHARED_DIR) + "/data/snapshots/pytorch_memory_timeline.raw.gz";
  if (!std::filesystem::exists(path))
    GTEST_SKIP() << "skipped: ../shared/data/snapshots (the real memory snapshots) is not beside "
                    "this checkout";
  auto d = ReadTorchTimeline(path);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->events, 16845);  // the README's count
  const auto& roles = d->roles.at_peak;
  EXPECT_EQ(std::accumulate(roles.begin(), roles.end(), int64_t{0}), d->peak_allocated);
  // A training step's peak: activations are most of it, every role PyTorch names is there.
  EXPECT_GT(At(*d, Role::kActivation), d->peak_allocated / 2);
  for (Role r : {Role::kParameter, Role::kOptimizerState, Role::kGradient, Role::kInput})
    EXPECT_GT(At(*d, r), 0) << memory::RoleName(r);
}

}  // namespace timeline_test
}  // namespace trainprof::snapshot
