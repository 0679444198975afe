#include "report/live_snapshot.h"

#include <gtest/gtest.h>

namespace trainprof::report {
namespace {

// Steps of 10, 20, 30 and 40 ms after the start: last 40, median 25, p95 38.5 (numpy's
// linear quantile), 4 steps in 100 ms = 40 steps/s, 320 samples/s at batch 8; with the last
// step a validation batch of 32, 8 + 8 + 8 + 32 samples in 100 ms = 560 samples/s.
TEST(LiveSnapshot, StepFiguresFromTheBoundaries) {
  const LiveSnapshot s = BuildLiveSnapshot(4, {0, 10'000'000, 30'000'000, 60'000'000, 100'000'000},
                                           {0, 8, 8, 8, 8}, 150'000'000, 8);
  EXPECT_EQ(s.step, 4);
  EXPECT_DOUBLE_EQ(s.elapsed_s, 0.15);
  EXPECT_NEAR(*s.step_last_s, 0.040, 1e-12);
  EXPECT_NEAR(*s.step_median_s, 0.025, 1e-12);
  EXPECT_NEAR(*s.step_p95_s, 0.0385, 1e-12);
  EXPECT_NEAR(*s.steps_per_s, 40, 1e-9);
  EXPECT_NEAR(*s.samples_per_s, 320, 1e-9);
  EXPECT_EQ(LiveLine(s),
            "trainprof live: step 4 | 40.0 ms/step (median 25.0, p95 38.5) | 40.0 steps/s, 320.0 "
            "samples/s | RSS n/a, CPU n/a | 0 s");
  const LiveSnapshot mixed = BuildLiveSnapshot(
      4, {0, 10'000'000, 30'000'000, 60'000'000, 100'000'000}, {0, 8, 8, 8, 32}, 150'000'000, 32);
  EXPECT_NEAR(*mixed.samples_per_s, 560, 1e-9);
}

// Before the first step nothing is measured, and without a batch size there are no samples/s:
// "n/a", and absent from the JSON, never 0.
TEST(LiveSnapshot, WhatIsNotMeasuredIsNa) {
  const LiveSnapshot none = BuildLiveSnapshot(0, {0}, {0}, 5'000'000'000, 0);
  EXPECT_FALSE(none.step_last_s || none.steps_per_s || none.samples_per_s || none.batch_size);
  EXPECT_EQ(LiveLine(none),
            "trainprof live: step 0 | n/a ms/step (median n/a, p95 n/a) | n/a steps/s, n/a "
            "samples/s | RSS n/a, CPU n/a | 5 s");
  EXPECT_EQ(LiveJson(none).find("step_last_s"), std::string::npos);
  const LiveSnapshot unbatched = BuildLiveSnapshot(2, {0, 10, 20}, {0, 0, 0}, 30, 0);
  EXPECT_TRUE(unbatched.steps_per_s.has_value());
  EXPECT_FALSE(unbatched.samples_per_s.has_value());
}

TEST(LiveSnapshot, JsonReadsBackAndBadInputIsNamed) {
  LiveSnapshot s =
      BuildLiveSnapshot(3, {0, 5'000'000, 9'000'000, 20'000'000}, {0, 4, 4, 4}, 21'000'000, 4);
  s.rss_bytes = 3.0 * (1 << 20);
  s.cpu_pct = 97;
  s.finished = true;
  auto back = ParseLiveJson(LiveJson(s), "live.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(LiveLine(*back), LiveLine(s));
  EXPECT_NE(LiveLine(s).find("step 3 (finished)"), std::string::npos);
  EXPECT_NE(LiveLine(s).find("RSS 3 MiB, CPU 97 %"), std::string::npos);
  auto bad = ParseLiveJson("{\"steps\": 1}", "run/live.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "run/live.json: not a trainprof live.json (no \"step\")");
  EXPECT_FALSE(ParseLiveJson("{", "x").ok());
}

}  // namespace
}  // namespace trainprof::report
