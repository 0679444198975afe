// The run folder's outputs as one list: the built-in writers and their switches, a writer of the
// test's own added to the list, files only the caller can write coming before the exporters,
// and `trainprof export`'s refusal when no exporter is chosen.
#include "report/run_writers.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "base/atomic_file.h"
#include "util/golden.h"

namespace trainprof::report {
namespace {

namespace fs = std::filesystem;

Report Small() {
  Report r;
  r.title = "trainprof report: writers";
  Section& s = r.AddSection("speed", "Speed report");
  s.AddMetric("samples_per_s", "Samples/s", 100.0, Unit::kPerSecond);
  s.AddTable("speed_report", "Throughput", {{"stage", "Stage"}}).rows.push_back({std::string("t")});
  return r;
}

std::vector<std::string> WrittenNames() {
  std::vector<std::string> out;
  for (const RunWriter& w : RunWriters()) out.push_back(w.what);
  return out;
}

TEST(RunWriters, TheListAndItsSwitches) {
  EXPECT_EQ(WrittenNames(),
            (std::vector<std::string>{"summary.txt", "report.html", "report.json", "CSV files",
                                      "MLflow store", "TensorBoard log dir"}));
  const std::string dir = testutil::FreshTempDir();
  Options::Output out;
  out.csv = false;
  std::string summary;
  ASSERT_TRUE(WriteReportFiles(Small(), dir, out, &summary).ok());
  for (const char* f : {"summary.txt", "report.html", "report.json"})
    EXPECT_TRUE(fs::exists(dir + "/" + f)) << f;
  EXPECT_FALSE(fs::exists(dir + "/speed_report.csv"));  // output.csv off
  EXPECT_NE(summary.find("Speed report"), std::string::npos);
}

// A writer added to the list runs with the others; a file only the caller can write comes
// before the exporters, which therefore see it.
TEST(RunWriters, ANewWriterIsOneEntryAndExportersSeeTheCallersFiles) {
  std::vector<RunWriter>& list = RunWriters();
  list.push_back({"answer.txt", WritePhase::kExport, [](const Options::Output&) { return true; },
                  [](const RunFiles& f) -> Status {
                    if (!fs::exists(f.dir + "/trace.json"))
                      return FailedPrecondition("trace.json was not written first");
                    return base::WriteFileAtomically(f.dir + "/answer.txt", f.report.title);
                  }});
  const std::string dir = testutil::FreshTempDir();
  std::string summary;
  const std::vector<ExtraFile> extra = {
      {"trace.json", [&] { return base::WriteFileAtomically(dir + "/trace.json", "{}"); }}};
  const Status s = WriteReportFiles(Small(), dir, Options::Output(), &summary, extra);
  list.pop_back();
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(testutil::ReadText(dir + "/answer.txt"), "trainprof report: writers");
  EXPECT_EQ(WrittenNames().size(), 6u);
}

// The first failure is returned and the other outputs are still written.
TEST(RunWriters, AFailingOutputDoesNotStopTheOthers) {
  const std::string dir = testutil::FreshTempDir();
  std::string summary;
  const std::vector<ExtraFile> extra = {
      {"trace.json", [] { return InvalidArgument("trace.json: cannot be written"); }}};
  const Status s = WriteReportFiles(Small(), dir, Options::Output(), &summary, extra);
  EXPECT_EQ(s.message(), "trace.json: cannot be written");
  EXPECT_TRUE(fs::exists(dir + "/report.json"));
}

TEST(RunWriters, ExportWithoutAnExporterIsRefused) {
  const std::string dir = testutil::FreshTempDir();
  const Status s = ExportRun(Small(), dir, Options::Output(), false);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "no exporter chosen (--mlflow DIR, --tensorboard DIR)");
}

TEST(RunWriters, ExportersDeclareTheirKeysOnce) {
  std::vector<std::string> keys, flags;
  for (const ExportKey& k : ExportKeys()) keys.push_back(k.key), flags.push_back(ExportFlag(k));
  EXPECT_EQ(keys, (std::vector<std::string>{"output.mlflow", "output.mlflow_experiment",
                                            "output.tensorboard"}));
  EXPECT_EQ(flags, (std::vector<std::string>{"--mlflow", "--mlflow-experiment", "--tensorboard"}));
  Options::Output o;
  o.mlflow = "mlruns";
  o.tensorboard = "tb";
  o.csv = true;
  ASSERT_EQ(EnabledExporters(o).size(), 2u);
  EXPECT_STREQ(EnabledExporters(o)[1]->what, "TensorBoard log dir");
  ClearExporters(o);
  EXPECT_TRUE(o.mlflow.empty() && o.tensorboard.empty());
  EXPECT_TRUE(o.csv);  // not an exporter's key
  EXPECT_TRUE(EnabledExporters(o).empty());
}

}  // namespace
}  // namespace trainprof::report
