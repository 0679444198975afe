#include "session/repeat_pool.h"

#include <gtest/gtest.h>

#include <cmath>

namespace trainprof::session {
namespace {

using report::Unit;

// A repeat's report: `steps` training steps of `step_s` each (the first `warmup` of them 10x
// slower, as warm-up steps are), batch 64, 1 ms of data wait per step.
report::Report Repeat(double step_s, int64_t steps, int64_t warmup) {
  report::Report r;
  r.title = "trainprof profile: fashion-mnist";
  r.AddMeta("run_dir", std::string("/runs/x/repeat"));
  r.config.emplace_back("speed.warmup_batches", warmup);
  report::Section& s = r.AddSection("speed", "Speed");
  s.AddMetric("training_avg_throughput", "Training throughput", 0.0, Unit::kPerSecond);
  s.AddMetric("training_avg_throughput_per_sample", "per sample", 0.0, Unit::kPerSecond);
  s.AddMetric("training_dataloader_wait_pct", "wait", 0.0, Unit::kPercent);
  s.AddTable("speed_report", "Throughput per stage",
             {{"stage", "Stage"},
              {"steps", "Steps", Unit::kCount},
              {"measured_steps", "Measured", Unit::kCount},
              {"mean_s", "Mean", Unit::kSeconds},
              {"median_s", "Median", Unit::kSeconds},
              {"samples_per_s", "Samples/s", Unit::kPerSecond},
              {"data_wait_pct", "Data wait", Unit::kPercent}})
      .rows.push_back({std::string("training"), steps, steps - warmup, step_s, step_s, 64 / step_s,
                       100 * 0.001 / step_s});
  report::Table& t = s.AddTable("training_rate", "Training throughput per step",
                                {{"step", "Step", Unit::kCount},
                                 {"batches_per_s", "Batches/s", Unit::kPerSecond},
                                 {"samples_per_s", "Samples/s", Unit::kPerSecond},
                                 {"data_wait_s", "Data wait", Unit::kSeconds}},
                                report::TableKind::kSeries);
  for (int64_t i = 0; i < steps; ++i) {
    const double d = i < warmup ? 10 * step_s : step_s;
    t.rows.push_back({i, 1 / d, 64 / d, 0.001});
  }
  r.AddSection("time", "Time report");
  return r;
}

double Metric(const report::Report& r, const char* section, const char* key) {
  return report::AsNumber(r.FindSection(section)->FindMetric(key)->value);
}

TEST(RepeatPoolTest, PoolsTheStepsAfterEachWarmupAndRecordsTheSpread) {
  auto pooled =
      PoolRepeats({Repeat(0.010, 12, 2), Repeat(0.011, 12, 2), Repeat(0.012, 12, 2)}, "/runs/x");
  ASSERT_TRUE(pooled.ok()) << pooled.status().message();
  const report::Report& r = *pooled;
  EXPECT_EQ(r.title, "trainprof profile: fashion-mnist (3 repeats)");
  EXPECT_EQ(report::AsNumber(*r.FindMeta("repeats")), 3);
  const report::Section& speed = *r.FindSection("speed");
  const report::Table& rate = *speed.FindTable("training_rate");
  ASSERT_EQ(rate.rows.size(), 36u);
  EXPECT_EQ(rate.columns.back().key, "repeat");
  EXPECT_EQ(report::AsNumber(rate.rows[12].back()), 2);
  // 10 measured steps per repeat, of 10, 11 and 12 ms; the warm-up steps are left out.
  const report::Table& sr = *speed.FindTable("speed_report");
  EXPECT_EQ(report::AsNumber(sr.rows[0][2]), 30);
  EXPECT_NEAR(report::AsNumber(sr.rows[0][3]), 0.011, 1e-12);  // mean step
  EXPECT_NEAR(report::AsNumber(sr.rows[0][4]), 0.011, 1e-12);  // median step
  EXPECT_NEAR(Metric(r, "speed", "training_avg_throughput_per_sample"), 64 / 0.011, 1e-6);
  EXPECT_NEAR(Metric(r, "speed", "training_dataloader_wait_pct"), 100 * 0.001 / 0.011, 1e-9);
  // The run-to-run spread: medians 10, 11, 12 ms have sd 1 ms around 11 ms.
  EXPECT_NEAR(Metric(r, "repeats", "median_step_cv_pct"), 100.0 / 11, 1e-9);
  EXPECT_NEAR(Metric(r, "repeats", "median_step_range_pct"), 20, 1e-9);
  EXPECT_EQ(r.FindSection("repeats")->tables[0].rows.size(), 3u);
  EXPECT_NE(r.FindSection("time"), nullptr);  // the other sections stay repeat 1's
}

TEST(RepeatPoolTest, NeedsStepsInEveryRepeat) {
  report::Report bare;
  bare.AddSection("speed", "Speed");
  auto r = PoolRepeats({Repeat(0.01, 5, 1), bare}, "/runs/x");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "repeat 2 has no per-step training times (speed.training_rate)");
  EXPECT_FALSE(PoolRepeats({Repeat(0.01, 5, 1)}, "/runs/x").ok());
}

}  // namespace
}  // namespace trainprof::session
