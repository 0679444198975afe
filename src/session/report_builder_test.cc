#include "session/report_builder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "report/html.h"
#include "util/html_outline.h"

namespace trainprof::session {
namespace {

// 100 measured training steps of 10 ms, of which `wait_ms` waiting for data.
SpeedInput Waiting(double wait_ms, int64_t workers) {
  SpeedInput in;
  record::StageSpeed& t = in.speed.train;
  t.steps = t.measured_steps = 100;
  t.mean_step_s = 0.010;
  t.data_wait_s = 100 * wait_ms * 1e-3;
  t.data_wait_pct = wait_ms * 10;
  in.loader_workers = workers;
  return in;
}

std::vector<std::string> Findings(const SpeedInput& in) {
  report::Report r;
  AddSpeedSection(in, r);
  std::vector<std::string> out;
  for (const report::Finding& f : r.sections.front().findings) out.push_back(f.text);
  return out;
}

TEST(SpeedSection, DataWaitFindingNamesTheWorkersThatHideTheWait) {
  // The loop itself loads (0 workers): 6 ms of loading per 4 ms of compute needs 2 workers.
  auto f = Findings(Waiting(6, 0));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0],
            "the training loop waited for data 60.0 % of each step (6.00 ms of 10.0 ms per step, "
            "over 100 measured steps); try num_workers >= 2 (now 0; each needs a free core) or a "
            "packed format read with one read per batch");
  // 2 workers that keep it waiting 3 ms of 10: each produces a batch in 20 ms, compute is 7 ms,
  // so 3 workers are needed.
  f = Findings(Waiting(3, 2));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].find("try num_workers >= 3 (now 2;"), std::string::npos) << f[0];
  // Workers not said: the advice has no number.
  f = Findings(Waiting(3, -1));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].find("try more data-loader workers"), std::string::npos) << f[0];
}

TEST(SpeedSection, NoDataWaitFindingAtOrBelowFivePercent) {
  EXPECT_TRUE(Findings(Waiting(0.5, 0)).empty());  // exactly 5 %
  EXPECT_TRUE(Findings(Waiting(0.1, 4)).empty());
}

// A loop without a data-loader scope and without validation (the GPU check's shape): one
// throughput line, no data-wait chart.
TEST(SpeedCharts, OnlyWhatWasMeasured) {
  report::Report r;
  report::Section& s = r.AddSection("speed", "Speed report");
  std::vector<record::RatePoint> points;
  for (int64_t i = 0; i < 10; ++i)
    points.push_back({i, 0, 0.1 * static_cast<double>(i), 10.0, 320.0,
                      std::numeric_limits<double>::quiet_NaN()});
  AddRateSeries(s, "training_rate", "Training", points);
  AddRateSeries(s, "validation_rate", "Validation", {});
  AddSpeedCharts(s);
  const std::string html = report::RenderHtmlString(r);
  auto outline = nlohmann::json::parse(testutil::HtmlOutline(html));
  const auto& charts = outline["sections"][0]["charts"];
  ASSERT_EQ(charts.size(), 1u) << charts;
  EXPECT_EQ(charts[0]["id"], "throughput");
  EXPECT_EQ(charts[0]["series"], 1);
  EXPECT_NE(html.find("Throughput over time (samples/s)"), std::string::npos);
}

// Training with a batch size and validation without one: both lines in batches/s, in one chart.
TEST(SpeedCharts, BatchesPerSecondWhenAStageLacksSamples) {
  report::Report r;
  report::Section& s = r.AddSection("speed", "Speed report");
  const double nan = std::numeric_limits<double>::quiet_NaN();
  AddRateSeries(s, "training_rate", "Training", {{0, 0, 0.1, 10.0, 320.0, 0.01}});
  AddRateSeries(s, "validation_rate", "Validation", {{0, 0, 0.2, 20.0, nan, 0.0}});
  AddSpeedCharts(s);
  const std::string html = report::RenderHtmlString(r);
  auto outline = nlohmann::json::parse(testutil::HtmlOutline(html));
  const auto& charts = outline["sections"][0]["charts"];
  ASSERT_EQ(charts.size(), 2u) << charts;
  EXPECT_EQ(charts[0]["id"], "throughput");
  EXPECT_EQ(charts[0]["series"], 2);
  EXPECT_EQ(charts[1]["id"], "dataloader_wait");
  EXPECT_NE(html.find("Throughput over time (batches/s)"), std::string::npos);
}

}  // namespace
}  // namespace trainprof::session
