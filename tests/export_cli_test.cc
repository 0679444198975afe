// Exporters end to end: `trainprof analyze --mlflow DIR --tensorboard DIR` and `trainprof export
// RUN_DIR` on a generated trace, the run folder's files in the MLflow store's artifacts, a run
// exported twice, and an exporter that fails without losing the run folder.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "util/golden.h"
#include "util/process.h"
#include "util/trace_gen.h"

namespace {

namespace testutil = trainprof::testutil;
namespace fs = std::filesystem;
using testutil::RunProcess;
const std::string kCli = TRAINPROF_CLI;

// A one-rank trace of three steps, with a kernel in each.
std::string WriteTrace(const std::string& dir) {
  testutil::GenTrace t;
  testutil::GenStep s{.host_dur_ns = 1'000'000, .data_loader_ns = 200'000};
  s.gpu_ops.push_back({.name = "ampere_sgemm_64x64_nn",
                       .start_ns = 300'000,
                       .dur_ns = 400'000,
                       .launch_delay_ns = 10'000});
  t.steps = {s, s, s};
  auto g = testutil::GenerateKinetoTrace(t, {.rank = 0});
  EXPECT_TRUE(g.ok()) << g.status().message();
  fs::create_directories(dir);
  std::ofstream(dir + "/rank0.pt.trace.json") << g->json;
  return dir;
}

std::vector<fs::path> RunFolders(const std::string& store) {
  std::vector<fs::path> out;
  for (const auto& exp : fs::directory_iterator(store)) {
    if (!exp.is_directory() || exp.path().filename() == ".trash") continue;
    for (const auto& run : fs::directory_iterator(exp.path()))
      if (run.is_directory()) out.push_back(run.path());
  }
  return out;
}

TEST(ExportCli, AnalyzeWritesTheRunIntoMlflowAndTensorBoard) {
  const std::string dir = testutil::FreshTempDir();
  const std::string traces = WriteTrace(dir + "/traces");
  auto a = RunProcess({kCli, "analyze", traces, "--run-dir", dir + "/run", "--db", "off",
                       "--critical-path", "--mlflow", dir + "/mlruns", "--mlflow-experiment",
                       "nightly", "--tensorboard", dir + "/tb"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  const auto runs = RunFolders(dir + "/mlruns");
  ASSERT_EQ(runs.size(), 1u);
  for (const char* f : {"report.json", "summary.txt", "report.html", "critical_path.trace.json"})
    EXPECT_TRUE(fs::exists(runs[0] / "artifacts" / f)) << f;  // written before the exporters
  EXPECT_NE(testutil::ReadText((runs[0].parent_path() / "meta.yaml").string()).find("nightly"),
            std::string::npos);
  EXPECT_TRUE(fs::exists(runs[0] / "metrics"));
  int events = 0;
  for (const auto& e : fs::directory_iterator(dir + "/tb"))
    events += e.path().filename().string().rfind("events.out.tfevents.", 0) == 0 ? 1 : 0;
  EXPECT_EQ(events, 1);

  // The same run again: refused, then written again with --replace.
  auto twice = RunProcess({kCli, "export", dir + "/run", "--mlflow", dir + "/mlruns",
                           "--mlflow-experiment", "nightly"});
  EXPECT_EQ(twice.exit_code, 2) << twice.err;
  EXPECT_NE(twice.err.find("already exported"), std::string::npos) << twice.err;
  auto replace = RunProcess({kCli, "export", dir + "/run", "--mlflow", dir + "/mlruns",
                             "--mlflow-experiment", "nightly", "--replace"});
  EXPECT_EQ(replace.exit_code, 0) << replace.err;
  EXPECT_EQ(RunFolders(dir + "/mlruns").size(), 1u);
  auto other = RunProcess({kCli, "export", dir + "/run", "--mlflow", dir + "/other"});
  EXPECT_EQ(other.exit_code, 0) << other.err;
  EXPECT_NE(other.out.find("-> MLflow store " + dir + "/other"), std::string::npos);
}

TEST(ExportCli, BadExportsAreOneLineAndTheRunFolderStays) {
  const std::string dir = testutil::FreshTempDir();
  const std::string traces = WriteTrace(dir + "/traces");
  std::ofstream(dir + "/not-a-folder") << "x";
  auto a = RunProcess({kCli, "analyze", traces, "--run-dir", dir + "/run", "--db", "off",
                       "--tensorboard", dir + "/not-a-folder/tb"});
  EXPECT_NE(a.exit_code, 0);
  EXPECT_NE(a.err.find(dir + "/not-a-folder/tb"), std::string::npos) << a.err;
  EXPECT_TRUE(fs::exists(dir + "/run/report.json"));  // the run itself is kept
  auto none = RunProcess({kCli, "export", dir + "/run"});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("no exporter chosen"), std::string::npos) << none.err;
  auto missing = RunProcess({kCli, "export", dir + "/traces", "--mlflow", dir + "/m"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("report.json"), std::string::npos) << missing.err;
  EXPECT_FALSE(fs::exists(dir + "/m"));
}

}  // namespace
