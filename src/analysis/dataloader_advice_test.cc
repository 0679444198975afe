#include "analysis/dataloader_advice.h"

#include <gtest/gtest.h>

namespace trainprof::analysis {
namespace {

// Steps whose data-loader wait is `wait_ms` each.
Overview Waits(const std::vector<double>& wait_ms) {
  Overview ov;
  for (size_t i = 0; i < wait_ms.size(); ++i) {
    StepBreakdown s;
    s.step = "ProfilerStep#" + std::to_string(i);
    s.ns[kDataLoader] = static_cast<int64_t>(wait_ms[i] * 1e6);
    ov.steps.push_back(s);
  }
  return ov;
}

TEST(LoaderWait, SpikesAtAnEpochStartCallForPersistentWorkers) {
  const LoaderWait w =
      DescribeLoaderWait(Waits({90, 1, 1, 1.2, 0.8, 1, 1, 1, 1, 1}), LoaderWorkers::kSome);
  EXPECT_EQ(w.pattern, LoaderWait::Pattern::kSpikes);
  EXPECT_EQ(w.detail,
            "the wait comes in spikes: 1 of 10 steps hold 91 % of it (the largest 90.0 ms in "
            "ProfilerStep#0; the median step waits 1.0 ms)");
  EXPECT_NE(w.advice.find("persistent_workers=True"), std::string::npos);
  EXPECT_NE(w.advice.find("prefetch_factor"), std::string::npos);
  EXPECT_EQ(w.advice.find("num_workers"), std::string::npos) << "workers are set already";
}

TEST(LoaderWait, ASteadyWaitWithWorkersCallsForMoreOrCheaperSamples) {
  const LoaderWait w = DescribeLoaderWait(Waits({10, 12, 11, 9, 10, 11}), LoaderWorkers::kSome);
  EXPECT_EQ(w.pattern, LoaderWait::Pattern::kSteady);
  EXPECT_EQ(w.detail, "every step waits: 11.0 ms at the median, 10.5 ms on average");
  EXPECT_NE(w.advice.find("The workers cannot keep up"), std::string::npos);
  // Without workers the same wait says to set them.
  const LoaderWait none = DescribeLoaderWait(Waits({10, 12, 11, 9}), LoaderWorkers::kNone);
  EXPECT_NE(none.advice.find("num_workers=0): set num_workers"), std::string::npos);
}

TEST(LoaderWait, TooFewStepsHaveNoPattern) {
  const LoaderWait w = DescribeLoaderWait(Waits({50, 1}), LoaderWorkers::kSome);
  EXPECT_EQ(w.pattern, LoaderWait::Pattern::kUnknown);
  EXPECT_TRUE(w.detail.empty());
  EXPECT_EQ(w.advice.find("set num_workers"), std::string::npos);
  EXPECT_FALSE(w.advice.empty());
}

}  // namespace
}  // namespace trainprof::analysis
