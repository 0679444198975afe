// The driver on the project's own small trace (tests/data/traces/small_gpu: three 100 µs steps,
// each with an sgemm, an all-reduce and a copy): what every front end gets from it.
#include "analysis/run/driver.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "analysis/rank_summary.h"
#include "trace/inprocess/inprocess_reader.h"
#include "util/golden.h"

namespace trainprof::analysis {
namespace {

namespace fs = std::filesystem;

std::string Small() { return testutil::SourceDir() + "/tests/data/traces/small_gpu"; }

// `n` copies of the small trace as the ranks of one run, and a stray config.json beside them.
std::string RankFolder(int n) {
  const std::string dir = testutil::FreshTempDir();
  for (int k = 0; k < n; ++k)
    fs::copy_file(Small() + "/rank0.json", fmt::format("{}/rank{}.json", dir, k));
  std::ofstream(dir + "/config.json") << "{\"lr\": 0.1}";
  return dir;
}

std::string MetaOf(const report::Report& r, const std::string& key) {
  const report::Value* v = r.FindMeta(key);
  return v != nullptr && std::holds_alternative<std::string>(*v) ? std::get<std::string>(*v) : "";
}

TEST(Driver, AnalyzeRunGivesTheReportWithItsFilesAndSkippedEntries) {
  const std::string dir = RankFolder(2);
  auto in = InputsOfOneRun({dir}, "reads one run");
  ASSERT_TRUE(in.ok()) << in.status().message();
  EXPECT_TRUE(in->skip_unreadable);
  EXPECT_EQ(in->what, dir + " (3 files)");
  auto run = AnalyzeRun(*in, {}, {});
  ASSERT_TRUE(run.ok()) << run.status().message();
  const report::Report& r = (*run)->report;
  EXPECT_EQ((*run)->summaries->ranks.size(), 2u);
  EXPECT_EQ(MetaOf(r, "files.0"), dir + "/config.json");
  EXPECT_EQ(MetaOf(r, "files.2"), dir + "/rank1.json");
  ASSERT_NE(r.FindSection("overview"), nullptr);
  ASSERT_NE(r.FindSection("data_quality"), nullptr);
  size_t skipped = 0;
  for (const report::Diagnostic& d : r.diagnostics)
    if (d.id == report::DiagnosticId::kInputSkipped &&
        d.message.find("config.json") != std::string::npos)
      ++skipped;
  EXPECT_EQ(skipped, 1u);
}

TEST(Driver, AFileGivenByNameFailsWithItsOwnError) {
  const std::string dir = testutil::FreshTempDir();
  std::ofstream(dir + "/bad.json") << "{\"lr\": 0.1}";
  auto in = InputsOfOneRun({dir + "/bad.json"}, "reads one run");
  ASSERT_TRUE(in.ok());
  EXPECT_FALSE(in->skip_unreadable);
  auto run = AnalyzeRun(*in, {}, {});
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.status().message().find(dir + "/bad.json: "), std::string::npos)
      << run.status().message();
}

TEST(Driver, AFolderOfSeveralRunsIsRefusedNamingThem) {
  const std::string dir = testutil::FreshTempDir();
  for (const char* run : {"a", "b"}) {
    fs::create_directories(fmt::format("{}/{}", dir, run));
    fs::copy_file(Small() + "/rank0.json", fmt::format("{}/{}/rank0.json", dir, run));
  }
  auto in = InputsOfOneRun({dir}, "diff compares one run with another");
  ASSERT_FALSE(in.ok());
  EXPECT_EQ(in.status().message(),
            fmt::format("{0}: holds the traces of 2 runs ({0}/a, {0}/b); diff compares one run "
                        "with another: name one of those folders",
                        dir));
}

TEST(Driver, TheStepsMeetWhereTheFrontEndsStopAndStart) {
  // --summary-only stops after ReadRun; merge starts at ReportRun: the same report as one call.
  const std::string dir = RankFolder(2);
  auto in = InputsOfOneRun({dir}, "reads one run");
  ASSERT_TRUE(in.ok());
  auto read = ReadRun(*in, {}, {});
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read->summaries->size(), 2u);
  EXPECT_EQ(read->skipped.size(), 1u);  // config.json, read and found no trace
  auto split = ReportRun(std::move(*read), *in);
  auto whole = AnalyzeRun(*in, {}, {});
  ASSERT_TRUE(split.ok() && whole.ok());
  ASSERT_EQ((*split)->report.sections.size(), (*whole)->report.sections.size());
  for (size_t i = 0; i < (*split)->report.sections.size(); ++i)
    EXPECT_EQ((*split)->report.sections[i].id, (*whole)->report.sections[i].id);
  // LoadRun keeps the models: the same ranks, read in rank order.
  std::vector<std::string> skipped;
  auto loaded = LoadRun(*in, {}, {}, false, &skipped);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded->models.size(), 2u);
  EXPECT_EQ(loaded->analyses.size(), 2u);
  EXPECT_EQ(skipped.size(), 1u);
  // Every file unreadable: the call fails, and each file's line is still given.
  const std::string bad = testutil::FreshTempDir();
  std::ofstream(bad + "/a.json") << "{}";
  std::ofstream(bad + "/b.json") << "not json";
  auto none = InputsOfOneRun({bad}, "reads one run");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(LoadRun(*none, {}, {}, false, &skipped).ok());
  EXPECT_EQ(skipped.size(), 2u);
}

TEST(Driver, NothingToAnalyseIsAnErrorNamingTheRun) {
  const std::string dir = testutil::FreshTempDir();
  std::ofstream(dir + "/rank0.json") << "{\"traceEvents\": []}";
  auto in = InputsOfOneRun({dir + "/rank0.json"}, "reads one run");
  ASSERT_TRUE(in.ok());
  auto run = AnalyzeRun(*in, {}, {});
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().message(),
            dir +
                "/rank0.json: nothing to analyse: the trace holds no events (was the profiler "
                "stopped before its first active step?)");
}

// The C++ job's recording (trace/inprocess/): one step in which aten::addmm launches a 300 ns
// kernel. Its analyze sections join the job's report, with the figures
// analyze gives but its operator view; a recording without GPU work has no GPU views.
TEST(Driver, AnInProcessRecordingGetsAnalyzesSections) {
  torchlib::OpData ops;
  ops.names = {"aten::addmm"};
  ops.ops = {{.begin_ns = 100, .dur_ns = 700, .tid = 7, .id = 1}};
  gpu::ActivityData a;
  a.names = {"cudaLaunchKernel", "gemm"};
  a.api = {{.name = 0, .tid = 7, .begin_ns = 200, .end_ns = 250, .correlation = 5}};
  a.device = {{.name = 1, .stream = 7, .begin_ns = 400, .end_ns = 700, .correlation = 5}};
  a.external = {{5, 1}};
  trace::InProcessRecording rec{.label = "job",
                                .base_time_ns = 1'000'000'000,
                                .pid = 1,
                                .ops = &ops,
                                .gpu = &a,
                                .steps = {{0, 0, 1000, 7}}};
  AnalyzeRequest req;
  req.steps = "all";
  std::vector<trace::TraceModel> models;
  models.push_back(trace::ReadInProcess(rec));
  const LoadedRun run = AnalyzeModels(std::move(models), req);
  EXPECT_EQ(run.files, std::vector<std::string>{"job"});
  report::Report r;
  ASSERT_TRUE(AdoptTraceSections(run, req, "job", "in-process recording: ", r));
  const report::Section* gpu = r.FindSection("gpu");
  ASSERT_NE(gpu, nullptr);
  EXPECT_TRUE(gpu->title.starts_with("in-process recording: "));
  const report::Table* t = r.FindTable("kernel_view", "kernel_view");
  ASSERT_NE(t, nullptr);
  ASSERT_EQ(t->rows.size(), 1u);
  // The torch report's operator table is its own (key_averages): analyze's is left out.
  EXPECT_EQ(r.FindSection("operator_view"), nullptr);
  EXPECT_EQ(r.FindSection("recommendations"), nullptr);

  rec.gpu = nullptr;
  std::vector<trace::TraceModel> cpu;
  cpu.push_back(trace::ReadInProcess(rec));
  report::Report none;
  EXPECT_FALSE(AdoptTraceSections(AnalyzeModels(std::move(cpu), req), req, "job", "", none));
  EXPECT_EQ(none.FindSection("gpu"), nullptr);
}

}  // namespace
}  // namespace trainprof::analysis
