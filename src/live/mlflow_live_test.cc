#include "live/mlflow_live.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "report/mlflow_export.h"
#include "util/golden.h"

namespace trainprof::live {
namespace {

namespace fs = std::filesystem;

std::string StatusLine(const std::string& meta_path) {
  const std::string text = testutil::ReadText(meta_path);
  const size_t at = text.find("\nstatus: ");
  return at == std::string::npos ? "" : text.substr(at + 1, text.find('\n', at + 1) - at - 1);
}

report::Report FinishedRun(const std::string& run_dir, bool stopped) {
  report::Report r;
  r.title = "trainprof report: mnist";
  r.kind = "profile";
  r.AddMeta("created_utc", std::string("2026-11-28T20:00:00Z"));
  r.AddMeta("run_dir", run_dir);
  if (stopped) r.AddMeta("stopped_by", std::string("RuntimeError: boom"));
  r.config = {{"output.name", std::string("mnist")}};
  r.AddSection("time", "Time").AddMetric("wall_time_s", "Wall time", 2.5, report::Unit::kSeconds);
  return r;
}

// While it trains: RUNNING, no end time, the metrics growing line by line. Finished: the export
// of the same run takes it over (no --replace), keeps the live metrics beside its own and says
// FINISHED; stopped by an error, FAILED.
TEST(MlflowLiveRun, RunningThenFinishedOrFailed) {
  for (const bool stopped : {false, true}) {
    const std::string tmp = testutil::FreshTempDir(), store = tmp + "/mlruns";
    const std::string run_dir = tmp + "/20261128T200000Z-mnist";
    const std::string id = report::MlflowRunIdFor(run_dir, "2026-11-28T20:00:00Z", "profile");
    auto live = MlflowLiveRun::Begin({.store = store}, id, "20261128T200000Z-mnist",
                                     1'796'000'000'000, "mnist");
    ASSERT_TRUE(live.ok()) << live.status().message();
    const std::string run = store + "/1/" + id;
    EXPECT_EQ(StatusLine(run + "/meta.yaml"), "status: 1");
    EXPECT_NE(testutil::ReadText(run + "/meta.yaml").find("end_time: null"), std::string::npos);
    ASSERT_TRUE((*live)->Log(1, 1000, {{"training_rate", 812.5}, {"live/step_time_s", 0.04}}).ok());
    ASSERT_TRUE((*live)->Log(2, 2000, {{"training_rate", 815.0}}).ok());
    EXPECT_EQ(testutil::ReadText(run + "/metrics/training_rate"), "1000 812.5 1\n2000 815 2\n");
    EXPECT_EQ(testutil::ReadText(run + "/metrics/live.step_time_s"), "1000 0.04 1\n");

    fs::create_directories(run_dir);
    auto done = report::WriteMlflowRun(FinishedRun(run_dir, stopped), run_dir, {.store = store});
    ASSERT_TRUE(done.ok()) << done.status().message();
    EXPECT_EQ(*done, id);
    EXPECT_EQ(StatusLine(run + "/meta.yaml"), stopped ? "status: 4" : "status: 3");
    EXPECT_EQ(testutil::ReadText(run + "/metrics/training_rate"), "1000 812.5 1\n2000 815 2\n");
    EXPECT_TRUE(fs::exists(run + "/metrics/time.wall_time_s"));
    EXPECT_FALSE(fs::exists(run + "/tags/trainprof.live"));  // no longer live
  }
}

// A store that cannot be written is an error naming it; the caller goes on without it.
TEST(MlflowLiveRun, AStoreThatCannotBeWrittenIsNamed) {
  const std::string tmp = testutil::FreshTempDir();
  std::ofstream(tmp + "/file") << "x";
  auto live = MlflowLiveRun::Begin({.store = tmp + "/file/mlruns"}, "ab", "r", 0, "e");
  ASSERT_FALSE(live.ok());
  EXPECT_NE(live.status().message().find(tmp + "/file/mlruns"), std::string::npos)
      << live.status().message();
}

}  // namespace
}  // namespace trainprof::live
