#include "live/snapshot.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace trainprof::live {
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

// Issue 69: the sparkline is in time order, slow steps where they came; the quantiles do not
// reorder it.
TEST(LiveSnapshot, TheSparklineIsInTimeOrder) {
  const LiveSnapshot s = BuildLiveSnapshot(
      4, {0, 90'000'000, 100'000'000, 110'000'000, 120'000'000}, {0, 1, 1, 1, 1}, 130'000'000, 1);
  ASSERT_EQ(s.recent_step_s.size(), 4u);
  EXPECT_NEAR(s.recent_step_s[0], 0.090, 1e-12);  // the slow first step comes first
  EXPECT_NEAR(s.recent_step_s[3], 0.010, 1e-12);
}

// Without a data-loader scope nothing measures the data wait: "n/a", and no data_wait in the
// JSON (read back as unmeasured), never "data 0 %".
TEST(LiveSnapshot, AnUnmeasuredDataWaitIsNa) {
  LiveSnapshot s = BuildLiveSnapshot(2, {0, 10, 20}, {0, 0, 0}, 30, 0);
  s.split = LiveSplit{0, 0.4, 0.6, 0, 0, 0, false};
  EXPECT_NE(LiveLine(s).find("data n/a, fwd 40 %"), std::string::npos) << LiveLine(s);
  const std::string json = LiveJson(s);
  EXPECT_EQ(json.find("data_wait"), std::string::npos) << json;
  StatusOr<LiveSnapshot> back = ParseLiveJson(json, "live.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_TRUE(back->split.has_value());
  EXPECT_FALSE(back->split->data_measured);
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

// Issue 72: memory by role at the last sampled step, in the JSON, the view and the trackers;
// what is not measured stays n/a.
TEST(LiveSnapshot, MemoryByRoleInTheJsonViewAndScalars) {
  LiveSnapshot s = BuildLiveSnapshot(2, {0, 5'000'000, 9'000'000}, {0, 4, 4}, 9'000'000, 4);
  const std::vector<std::string> none = LiveView(s, 200);
  EXPECT_FALSE(std::ranges::any_of(none, [](const std::string& l) {
    return l.starts_with("memory");
  }));  // no row where nothing measures the roles
  s.roles_step = 40;
  s.parameter_bytes = 13.0 * (1 << 20);
  s.gradient_bytes = 13.0 * (1 << 20);
  s.optimizer_state_bytes = 26.0 * (1 << 20);
  auto back = ParseLiveJson(LiveJson(s), "live.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->roles_step, 40);
  EXPECT_EQ(back->optimizer_state_bytes, 26.0 * (1 << 20));
  EXPECT_FALSE(back->other_bytes.has_value());
  const std::vector<std::string> view = LiveView(*back, 200);
  EXPECT_TRUE(std::ranges::any_of(view, [](const std::string& l) {
    return l ==
           "memory     weights 13 MiB, gradients 13 MiB, optimizer state 26 MiB, other n/a "
           "(step 40)";
  }));
  const auto scalars = LiveScalars(s);
  EXPECT_TRUE(std::ranges::any_of(scalars, [](const auto& kv) {
    return kv.first == "live/optimizer_state_bytes" && kv.second == 26.0 * (1 << 20);
  }));
}

LiveSnapshot WithSplit(double data, double fwd, double bwd, double opt, double comm) {
  LiveSnapshot s = BuildLiveSnapshot(2, {0, 100'000'000, 200'000'000}, {0, 8, 8}, 200'000'000, 8);
  s.split = LiveSplit{data, fwd, bwd, opt, comm, 1 - data - fwd - bwd - opt - comm};
  return s;
}

// The verdict, in order: input-bound, communication-bound, GPU-bound, host-bound, CPU compute;
// nothing measured says nothing.
TEST(LiveSnapshot, TheVerdictFollowsTheSplitAndTheGpus) {
  auto verdict = [](LiveSnapshot s) {
    AddLiveVerdict(s);
    return s.verdict + " | " + s.finding;
  };
  EXPECT_EQ(verdict(WithSplit(0.31, 0.2, 0.3, 0.1, 0)),
            "input-bound | the loop waits for data 31 % of its time: more DataLoader workers, "
            "pin_memory, prefetch");
  EXPECT_EQ(verdict(WithSplit(0.05, 0.2, 0.3, 0.1, 0.3)).substr(0, 22), "communication-bound | ");
  LiveSnapshot busy = WithSplit(0.05, 0.2, 0.3, 0.1, 0);
  busy.devices = {{0, 93.0, 12e9, 15.0, 410.0}, {1, 88.0, std::nullopt, std::nullopt, 400.0}};
  EXPECT_EQ(verdict(busy).substr(0, 12), "GPU-bound | ");
  LiveSnapshot idle = busy;
  idle.devices[0].util_pct = 34;
  idle.devices[1].util_pct = 20;
  EXPECT_NE(verdict(idle).find("host-bound | the GPUs are at most 34 % utilised"),
            std::string::npos);
  EXPECT_EQ(verdict(WithSplit(0.05, 0.3, 0.4, 0.15, 0)),
            "compute-bound (CPU) | forward, backward and the optimizer take 85 % of the loop on "
            "the CPU");
  EXPECT_EQ(verdict(BuildLiveSnapshot(0, {0}, {0}, 10, 0)), " | ");
  LiveSnapshot creep = WithSplit(0.05, 0.3, 0.4, 0.15, 0);
  creep.rss_growth_bytes_per_min = 200.0 * (1 << 20);
  EXPECT_NE(verdict(creep).find("; memory creeps: RSS grows 200 MiB a minute"), std::string::npos);
}

// The split, the devices and the verdict travel in live.json, and show in the line and the
// view; a GPU figure NVML did not give stays n/a.
TEST(LiveSnapshot, SplitDevicesAndVerdictInTheJsonLineAndView) {
  LiveSnapshot s = WithSplit(0.1, 0.3, 0.4, 0.1, 0);
  s.epoch = 3;
  s.devices = {{0, 93.0, 12.0 * (1 << 30), 15.0, std::nullopt}};
  AddLiveVerdict(s);
  auto back = ParseLiveJson(LiveJson(s), "live.json");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(LiveLine(*back), LiveLine(s));
  EXPECT_NE(LiveLine(s).find(" | split data 10 %, fwd 30 %, bwd 40 %, opt 10 %, comm 0 %, other "
                             "10 % | GPU 0: util 93 %, memory 12.0 GiB (15 %), power n/a | "
                             "GPU-BOUND: "),
            std::string::npos)
      << LiveLine(s);
  const std::vector<std::string> view = LiveView(*back, 80);
  ASSERT_EQ(view.size(), 6u);
  EXPECT_TRUE(view[0].starts_with("trainprof live | step 2, epoch 3 | 100.0 ms/step")) << view[0];
  EXPECT_TRUE(view[1].starts_with("step time  ▁▁  100.0–100.0 ms, last 2 steps")) << view[1];
  EXPECT_EQ(view[2].substr(0, 53), "split      [DDDDFFFFFFFFFFFFBBBBBBBBBBBBBBBBOOOO....]");
  EXPECT_TRUE(view[4].starts_with("device     GPU 0: util 93 %")) << view[4];
  EXPECT_TRUE(view[5].starts_with("verdict    GPU-BOUND: the busiest GPU is 93 %")) << view[5];
  for (const std::string& l : view) EXPECT_LE(l.size(), 80u + 3 * 40u) << l;  // cut to 80 columns
  EXPECT_EQ(LiveView(BuildLiveSnapshot(0, {0}, {0}, 1, 0), 200)[2].substr(0, 14), "split      n/a");
}

}  // namespace
}  // namespace trainprof::live
