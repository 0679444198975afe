// `trainprof analyze` and `trainprof diff` end to end, on the shared real traces and on bad input.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "util/golden.h"
#include "util/gzip.h"
#include "util/html_outline.h"
#include "util/process.h"
#include "util/trace_gen.h"

namespace {

namespace testutil = trainprof::testutil;
using testutil::RunProcess;
const std::string kTraces = std::string(TRAINPROF_SHARED_DIR) + "/data/traces/";

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

const nlohmann::json* Section(const nlohmann::json& r, const std::string& id) {
  for (const auto& s : r["sections"])
    if (s["id"] == id) return &s;
  return nullptr;
}

const nlohmann::json* Table(const nlohmann::json& section, const std::string& id) {
  for (const auto& t : section["tables"])
    if (t["id"] == id) return &t;
  return nullptr;
}

class AnalyzeShared : public ::testing::TestWithParam<std::string> {};

TEST_P(AnalyzeShared, PrintsEverySectionAndWritesTheRunFolder) {
  TRAINPROF_SKIP_WITHOUT_SHARED_TRACES();
  std::string dir = testutil::FreshTempDir();
  auto r = RunProcess({TRAINPROF_CLI, "analyze", kTraces + GetParam(), "--run-dir", dir});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json rep = ReadJson(dir + "/report.json");
  for (const char* heading :
       {"Overview (step time breakdown)", "GPU summary", "HTA breakdowns", "Recommendations"})
    EXPECT_NE(r.out.find(heading), std::string::npos) << GetParam() << ": " << heading;
  // HTA's tables, or, in a trace without GPU work, the one line that says so.
  const nlohmann::json* hta = Section(rep, "hta");
  ASSERT_NE(hta, nullptr);
  if (hta->contains("no_data")) {
    EXPECT_NE(
        r.out.find("HTA breakdowns\n--------------\n  " + (*hta)["no_data"].get<std::string>()),
        std::string::npos)
        << GetParam();
  } else {
    for (const char* heading : {"Temporal breakdown", "Kernel launch statistics"})
      EXPECT_NE(r.out.find(heading), std::string::npos) << GetParam() << ": " << heading;
  }
  EXPECT_EQ(rep["kind"], "analyze");
  for (const char* id : {"overview", "gpu", "hta", "recommendations"})
    EXPECT_NE(Section(rep, id), nullptr) << id;
  // Every step's categories sum to its step time.
  const nlohmann::json* steps = Table(*Section(rep, "overview"), "step_breakdown");
  ASSERT_NE(steps, nullptr);
  for (const auto& row : (*steps)["rows"]) {
    double sum = 0;
    for (const char* k : {"kernel_s", "memcpy_s", "memset_s", "communication_s", "runtime_s",
                          "dataloader_s", "cpu_exec_s", "other_s"})
      sum += row[k].get<double>();
    EXPECT_NEAR(sum, row["step_time_s"].get<double>(), 1e-9) << row["step"];
  }
  std::ifstream csv(dir + "/temporal_breakdown.csv");
  EXPECT_TRUE(csv.good());
}

INSTANTIATE_TEST_SUITE_P(Folders, AnalyzeShared,
                         ::testing::Values("trace_filter", "trace_diff_control", "trace_diff_test",
                                           "negative_queue_length_values_check",
                                           "nccl_parser_config", "ns_resolution_trace",
                                           "critical_path_simple_add", "cpu_only", "edge_cases",
                                           "tb_gpu_metrics"));

TEST(Analyze, TwoRanksAndJsonOnStdout) {
  TRAINPROF_SKIP_WITHOUT_SHARED_TRACES();
  std::string dir = testutil::FreshTempDir();
  auto r = RunProcess(
      {TRAINPROF_CLI, "analyze", kTraces + "trace_filter", "--format", "json", "--run-dir", dir});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json rep = nlohmann::json::parse(r.out);
  EXPECT_EQ(rep["meta"]["ranks"], 2);
  const nlohmann::json* t = Table(*Section(rep, "hta"), "temporal_breakdown");
  ASSERT_NE(t, nullptr);
  ASSERT_EQ((*t)["rows"].size(), 2u);
  EXPECT_EQ((*t)["rows"][0]["rank"], "0");
  EXPECT_EQ((*t)["rows"][1]["rank"], "1");
}

// Three 150.5 µs elementwise kernels at 320, 480 and 640 µs into the step, launched 15 µs
// before each.
void AddThreeKernels(testutil::GenStep& s) {
  for (int64_t k = 0; k < 3; ++k)
    s.gpu_ops.push_back({.name = "void at::native::vectorized_elementwise_kernel<4>",
                         .start_ns = 320'000 + k * 160'000,
                         .dur_ns = 150'500,
                         .launch_delay_ns = 15'000});
}

// Two ranks of a data-loader-bound job, generated (util/trace_gen.h) into `dir`: each 1,000 µs
// step spends 300 µs in the DataLoader, then runs three 150.5 µs kernels; rank 1 is 20 % slower.
std::vector<testutil::Expected> WriteGeneratedRanks(const std::string& dir) {
  testutil::GenStep s{.host_dur_ns = 1'000'000, .data_loader_ns = 300'000};
  s.cpu_ops.push_back({.name = "aten::relu", .start_ns = 300'000, .dur_ns = 600'000});
  AddThreeKernels(s);
  testutil::GenTrace t;
  t.world_size = 2;
  t.steps = {s, s, s};
  std::vector<testutil::Expected> out;
  for (testutil::GenRank r : {testutil::GenRank{.rank = 0, .skew_ns = 3'000'017},
                              testutil::GenRank{.rank = 1, .slowdown_num = 6, .slowdown_den = 5}}) {
    auto g = testutil::GenerateKinetoTrace(t, r);
    EXPECT_TRUE(g.ok()) << g.status().message();
    if (!g.ok()) return out;
    std::ofstream(dir + "/rank" + std::to_string(r.rank) + ".pt.trace.json") << g->json;
    out.push_back(g->expected);
  }
  return out;
}

// AnalyzeShared's checks on generated traces, so they run on a clone with nothing beside it.
TEST(Analyze, GeneratedRanksPrintEverySectionAndWriteTheRunFolder) {
  std::string dir = testutil::FreshTempDir();
  std::filesystem::create_directories(dir + "/traces");
  std::vector<testutil::Expected> ex = WriteGeneratedRanks(dir + "/traces");
  ASSERT_EQ(ex.size(), 2u);
  auto r = RunProcess(
      {TRAINPROF_CLI, "analyze", dir + "/traces", "--run-dir", dir + "/out", "--db", "off"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* heading : {"Overview (step time breakdown)", "GPU summary", "HTA breakdowns",
                              "Recommendations", "Temporal breakdown", "Kernel launch statistics"})
    EXPECT_NE(r.out.find(heading), std::string::npos) << heading;
  // One finding for both ranks, led by the rank where it costs the most.
  EXPECT_NE(r.out.find("[warning] Ranks 0–1: 30.0% of the step time is in the DataLoader "
                       "(threshold 5%) (rank 1: 0.360 ms of 1.200 ms; every step waits: 0.4 ms at "
                       "the median, 0.4 ms on average). Loading runs in the training process "
                       "(num_workers=0): set num_workers"),
            std::string::npos)
      << r.out;
  nlohmann::json rep = ReadJson(dir + "/out/report.json");
  EXPECT_EQ(rep["kind"], "analyze");
  EXPECT_EQ(rep["meta"]["ranks"], 2);
  for (const char* id : {"overview", "gpu", "hta", "recommendations"})
    EXPECT_NE(Section(rep, id), nullptr) << id;
  // Every step's categories sum to its step time, which is the generated one.
  const nlohmann::json* steps = Table(*Section(rep, "overview"), "step_breakdown");
  ASSERT_NE(steps, nullptr);
  ASSERT_EQ((*steps)["rows"].size(), 6u);
  for (size_t i = 0; i < 6; ++i) {
    const auto& row = (*steps)["rows"][i];
    const testutil::ExpectedStep& e = ex[i / 3].steps[i % 3];
    EXPECT_EQ(row["rank"], std::to_string(i / 3));
    EXPECT_EQ(row["step"], e.name);
    EXPECT_NEAR(row["step_time_s"].get<double>(), e.dur_ns / 1e9, 1e-15);
    double sum = 0;
    for (const char* k : {"kernel_s", "memcpy_s", "memset_s", "communication_s", "runtime_s",
                          "dataloader_s", "cpu_exec_s", "other_s"})
      sum += row[k].get<double>();
    EXPECT_NEAR(sum, row["step_time_s"].get<double>(), 1e-12) << row["step"];
    EXPECT_NEAR(row["dataloader_s"].get<double>(), e.overview_ns[testutil::kGenDataLoader] / 1e9,
                1e-15);
  }
  const nlohmann::json* t = Table(*Section(rep, "hta"), "temporal_breakdown");
  ASSERT_NE(t, nullptr);
  ASSERT_EQ((*t)["rows"].size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ((*t)["rows"][i]["rank"], std::to_string(i));
    EXPECT_NEAR((*t)["rows"][i]["idle_s"].get<double>(), ex[i].hta_idle_ns / 1e9, 1e-15);
  }
  std::ifstream csv(dir + "/out/temporal_breakdown.csv");
  EXPECT_TRUE(csv.good());
}

// The views of issue 24 end to end: a loop whose data loader is a user's "load_batch" range is
// "not marked" (a warning, no DataLoader time) until --dataloader-pattern names it; the Kernel
// and Operator views count the generated kernels exactly.
// A working folder where the default history (runs/trainprof.db) cannot be made (here "runs"
// is a file; read-only folders are the same for a non-root user): the run is written and
// analyze succeeds with a warning; a history asked for by --db still fails the command.
TEST(Analyze, AnUnwritableDefaultHistoryIsAWarning) {
  std::string dir = testutil::FreshTempDir();
  std::filesystem::create_directories(dir + "/traces");
  std::filesystem::create_directories(dir + "/cwd");
  std::ofstream(dir + "/cwd/runs") << "not a folder";
  WriteGeneratedRanks(dir + "/traces");
  const char* had = std::getenv("TRAINPROF_DB");
  const std::string saved = had != nullptr ? had : "";
  unsetenv("TRAINPROF_DB");
  const std::string cmd = std::string("cd ") + dir + "/cwd && exec " + TRAINPROF_CLI + " analyze " +
                          dir + "/traces --run-dir " + dir + "/out";
  auto r = RunProcess({"/bin/sh", "-c", cmd});
  auto asked = RunProcess({"/bin/sh", "-c", cmd + "2 --db runs/trainprof.db"});
  if (had != nullptr) setenv("TRAINPROF_DB", saved.c_str(), 1);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("trainprof: warning: the run was not recorded in the run history"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(std::filesystem::exists(dir + "/out/report.json"));
  EXPECT_EQ(asked.exit_code, 1) << asked.err;
  EXPECT_TRUE(std::filesystem::exists(dir + "/out2/report.json"));
}

// -q as in run and profile: nothing on the terminal, the run folder written and recorded.
TEST(Analyze, QuietPrintsNothingAndWritesTheFolder) {
  std::string dir = testutil::FreshTempDir();
  std::filesystem::create_directories(dir + "/traces");
  WriteGeneratedRanks(dir + "/traces");
  auto r = RunProcess({TRAINPROF_CLI, "analyze", dir + "/traces", "-q", "--run-dir", dir + "/out",
                       "--db", dir + "/history.db"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "");
  EXPECT_TRUE(std::filesystem::exists(dir + "/out/report.json"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/history.db"));
}

// diff reads what analyze reads: a TensorBoard log dir's plugins/profile/<run>/ at any depth; a
// folder of two runs is one line naming them; a side cut short exits 4 unless allowed.
TEST(Analyze, DiffTakesTheFoldersAnalyzeTakes) {
  namespace fs = std::filesystem;
  const std::string dir = testutil::FreshTempDir();
  fs::create_directories(dir + "/tb/plugins/profile/run1");
  fs::create_directories(dir + "/flat");
  WriteGeneratedRanks(dir + "/tb/plugins/profile/run1");
  WriteGeneratedRanks(dir + "/flat");
  auto ok =
      RunProcess({TRAINPROF_CLI, "diff", dir + "/tb", dir + "/flat", "--run-dir", dir + "/d1"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  fs::create_directories(dir + "/tb/plugins/profile/run2");
  WriteGeneratedRanks(dir + "/tb/plugins/profile/run2");
  auto two =
      RunProcess({TRAINPROF_CLI, "diff", dir + "/tb", dir + "/flat", "--run-dir", dir + "/d2"});
  EXPECT_EQ(two.exit_code, 2);
  EXPECT_NE(two.err.find("holds the traces of 2 runs"), std::string::npos) << two.err;
  // rank1 cut in the middle of its events.
  const std::string text = testutil::ReadText(dir + "/flat/rank1.pt.trace.json");
  std::ofstream(dir + "/flat/rank1.pt.trace.json", std::ios::trunc)
      << text.substr(0, text.size() / 2);
  auto cut = RunProcess({TRAINPROF_CLI, "diff", dir + "/tb/plugins/profile/run1", dir + "/flat",
                         "--run-dir", dir + "/d3"});
  EXPECT_EQ(cut.exit_code, 4) << cut.err;
  EXPECT_NE(cut.err.find("rank1.pt.trace.json: cut short"), std::string::npos) << cut.err;
  EXPECT_TRUE(fs::exists(dir + "/d3/report.json"));
  auto allowed = RunProcess({TRAINPROF_CLI, "diff", dir + "/tb/plugins/profile/run1", dir + "/flat",
                             "--run-dir", dir + "/d4", "--allow-data-errors"});
  EXPECT_EQ(allowed.exit_code, 0) << allowed.err;
}

// diff A B with A and B analyze runs of the history (or their run folders): the traces they
// read, wherever diff is run from.
TEST(Analyze, DiffOfTwoRecordedRuns) {
  namespace fs = std::filesystem;
  const std::string dir = testutil::FreshTempDir();
  fs::create_directories(dir + "/traces");
  WriteGeneratedRanks(dir + "/traces");
  const std::string db = dir + "/h.db";
  for (const char* run : {"/a", "/b"}) {
    auto r =
        RunProcess({TRAINPROF_CLI, "analyze", dir + "/traces", "--run-dir", dir + run, "--db", db});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  auto by_id = RunProcess({TRAINPROF_CLI, "diff", "latest~1", "latest", "--db", db, "--run-dir",
                           dir + "/d1", "--format", "json"});
  ASSERT_EQ(by_id.exit_code, 0) << by_id.err;
  EXPECT_NE(by_id.out.find("\"kind\""), std::string::npos);
  auto by_folder =
      RunProcess({TRAINPROF_CLI, "diff", dir + "/a", dir + "/b", "--run-dir", dir + "/d2"});
  EXPECT_EQ(by_folder.exit_code, 0) << by_folder.err;
  auto unknown = RunProcess(
      {TRAINPROF_CLI, "diff", "latest", "nothere", "--db", db, "--run-dir", dir + "/d3"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_EQ(unknown.err, "trainprof: nothere: no run of that id in " + db + "\n");
}

// Writes a generated rank-0 trace of three `step`s to `path`.
void WriteThreeSteps(const testutil::GenStep& step, const std::string& path) {
  testutil::GenTrace t;
  t.steps = {step, step, step};
  auto g = testutil::GenerateKinetoTrace(t, {.rank = 0});
  ASSERT_TRUE(g.ok()) << g.status().message();
  std::ofstream(path) << g->json;
}

// A CPU-only trace (torch without CUDA): each GPU view is its title and one line, not pages of
// empty tables; report.json keeps the tables, so scripts find every table they know.
TEST(Analyze, ACpuOnlyTraceHasOneLinePerGpuView) {
  const std::string dir = testutil::FreshTempDir();
  testutil::GenStep s{.host_dur_ns = 1'000'000};
  s.cpu_ops.push_back({.name = "aten::mm", .start_ns = 100'000, .dur_ns = 700'000});
  WriteThreeSteps(s, dir + "/cpu.pt.trace.json");
  auto r = RunProcess({TRAINPROF_CLI, "analyze", dir + "/cpu.pt.trace.json", "--run-dir",
                       dir + "/out", "--db", "off"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string line =
      "  No GPU work in the trace: a CPU-only run (torch without CUDA, or a legacy profiler "
      "trace), so nothing to show here.\n";
  for (const std::string title : {"GPU summary", "HTA breakdowns", "Kernel view"})
    EXPECT_NE(r.out.find(title + "\n" + std::string(title.size(), '-') + "\n" + line),
              std::string::npos)
        << title << "\n"
        << r.out;
  EXPECT_EQ(r.out.find("Temporal breakdown"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Top 15 operators by host self time"), std::string::npos);
  const nlohmann::json rep = ReadJson(dir + "/out/report.json");
  EXPECT_NE(Table(*Section(rep, "hta"), "temporal_breakdown"), nullptr);
  EXPECT_EQ((*Section(rep, "hta"))["no_data"], line.substr(2, line.size() - 3));
}

// Zero-length operator calls are calls, as the TensorBoard plugin counts them: at a step's start,
// beside a sibling, twice at one time, and at the step's very end.
TEST(Analyze, ZeroLengthOperatorCallsAreCounted) {
  const std::string dir = testutil::FreshTempDir();
  std::string ev;
  auto add = [&](const std::string& cat, const std::string& name, int ts, int dur) {
    ev += fmt::format(R"({}{{"ph":"X","cat":"{}","name":"{}","pid":1,"tid":1,"ts":{},"dur":{}}})",
                      ev.empty() ? "" : ",\n", cat, name, ts, dur);
  };
  for (int s = 0; s < 3; ++s) {
    const int t = 1000 + s * 1000;
    add("user_annotation", fmt::format("ProfilerStep#{}", s + 1), t, 900);
    add("cpu_op", "aten::empty", t, 0);
    add("cpu_op", "aten::relu", t + 100, 300);
    add("cpu_op", "aten::view", t + 400, 0);
    add("cpu_op", "aten::view", t + 400, 0);
    add("cpu_op", "aten::add", t + 900, 0);
  }
  std::ofstream(dir + "/zero.json") << "{\"traceEvents\": [\n" + ev + "\n]}";
  auto r = RunProcess(
      {TRAINPROF_CLI, "analyze", dir + "/zero.json", "--run-dir", dir + "/out", "--db", "off"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json rep = ReadJson(dir + "/out/report.json");
  std::map<std::string, int64_t> calls;
  for (const auto& row : (*Table(*Section(rep, "operator_view"), "operator_view"))["rows"])
    calls[row["name"]] = row["calls"];
  EXPECT_EQ(calls,
            (std::map<std::string, int64_t>{
                {"aten::add", 3}, {"aten::empty", 3}, {"aten::relu", 3}, {"aten::view", 6}}));
}

// Two traces of different models: diff says so before it says which is faster.
TEST(Analyze, DiffOfTwoModelsWarnsThatTheyDiffer) {
  namespace fs = std::filesystem;
  const std::string dir = testutil::FreshTempDir();
  fs::create_directories(dir + "/a");
  fs::create_directories(dir + "/b");
  WriteGeneratedRanks(dir + "/a");
  testutil::GenStep s{.host_dur_ns = 800'000};
  s.cpu_ops.push_back({.name = "aten::conv2d", .start_ns = 100'000, .dur_ns = 500'000});
  AddThreeKernels(s);
  WriteThreeSteps(s, dir + "/b/rank0.pt.trace.json");
  auto other = RunProcess(
      {TRAINPROF_CLI, "diff", dir + "/a", dir + "/b", "--run-dir", dir + "/d", "--db", "off"});
  ASSERT_EQ(other.exit_code, 0) << other.err;
  EXPECT_NE(other.out.find("A and B look like different models or workloads: 0 % of A's "
                           "operator calls and 0 % of B's"),
            std::string::npos)
      << other.out;
  EXPECT_NE(other.out.find("but they run different operators"), std::string::npos) << other.out;
  auto same = RunProcess(
      {TRAINPROF_CLI, "diff", dir + "/a", dir + "/a", "--run-dir", dir + "/e", "--db", "off"});
  ASSERT_EQ(same.exit_code, 0) << same.err;
  EXPECT_EQ(same.out.find("different models"), std::string::npos) << same.out;
}

TEST(Analyze, DataLoaderPatternAndTheOperatorAndKernelViews) {
  std::string dir = testutil::FreshTempDir();
  testutil::GenStep s{.host_dur_ns = 1'000'000};
  s.cpu_ops.push_back({.name = "load_batch", .category = "user_annotation", .dur_ns = 250'000});
  s.cpu_ops.push_back({.name = "aten::relu", .start_ns = 300'000, .dur_ns = 600'000});
  AddThreeKernels(s);
  testutil::GenTrace t;
  t.steps = {s, s, s};
  // Without a training loop (an inference trace) there is no data loader to miss.
  auto inference = testutil::GenerateKinetoTrace(t, {.rank = 0});
  ASSERT_TRUE(inference.ok()) << inference.status().message();
  std::ofstream(dir + "/inference.pt.trace.json") << inference->json;
  auto served = RunProcess({TRAINPROF_CLI, "analyze", dir + "/inference.pt.trace.json", "--run-dir",
                            dir + "/i", "--db", "off"});
  ASSERT_EQ(served.exit_code, 0) << served.err;
  EXPECT_EQ(served.out.find("No data-loader range"), std::string::npos) << served.out;
  // A training step (its optimizer step marks it) without a data-loader range is warned about.
  for (auto& step : t.steps)
    step.cpu_ops.push_back({.name = "Optimizer.step#SGD.step",
                            .category = "user_annotation",
                            .start_ns = 920'000,
                            .dur_ns = 50'000});
  auto g = testutil::GenerateKinetoTrace(t, {.rank = 0});
  ASSERT_TRUE(g.ok()) << g.status().message();
  std::ofstream(dir + "/rank0.pt.trace.json") << g->json;
  auto plain = RunProcess({TRAINPROF_CLI, "analyze", dir + "/rank0.pt.trace.json", "--run-dir",
                           dir + "/a", "--db", "off"});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_NE(plain.out.find("No data-loader range in the trace"), std::string::npos) << plain.out;
  nlohmann::json a = ReadJson(dir + "/a/report.json");
  const nlohmann::json* phase = Section(a, "phase_view");
  ASSERT_NE(phase, nullptr);
  EXPECT_EQ((*phase)["metrics"]["dataloader_markers"]["value"], 0);
  ASSERT_EQ((*phase)["findings"].size(), 1u);
  EXPECT_EQ((*phase)["findings"][0]["severity"], "warning");

  auto marked = RunProcess({TRAINPROF_CLI, "analyze", dir + "/rank0.pt.trace.json", "--run-dir",
                            dir + "/b", "--db", "off", "--dataloader-pattern", "load_batch"});
  ASSERT_EQ(marked.exit_code, 0) << marked.err;
  nlohmann::json b = ReadJson(dir + "/b/report.json");
  phase = Section(b, "phase_view");
  ASSERT_NE(phase, nullptr);
  EXPECT_EQ((*phase)["metrics"]["dataloader_markers"]["value"], 3);
  EXPECT_TRUE((*phase)["findings"].empty());
  const nlohmann::json* steps = Table(*Section(b, "overview"), "step_breakdown");
  ASSERT_NE(steps, nullptr);
  for (const auto& row : (*steps)["rows"])
    EXPECT_NEAR(row["dataloader_s"].get<double>(), 250e-6, 1e-15) << row["step"];

  const nlohmann::json* kernels = Table(*Section(b, "kernel_view"), "kernel_view");
  ASSERT_NE(kernels, nullptr);
  ASSERT_EQ((*kernels)["rows"].size(), 1u);
  EXPECT_EQ((*kernels)["rows"][0]["calls"], 9);
  EXPECT_NEAR((*kernels)["rows"][0]["total_s"].get<double>(), 9 * 150'500e-9, 1e-15);
  const nlohmann::json* ops = Table(*Section(b, "operator_view"), "operator_view");
  ASSERT_NE(ops, nullptr);
  ASSERT_EQ((*ops)["rows"].size(), 1u);
  EXPECT_EQ((*ops)["rows"][0]["name"], "aten::relu");
  EXPECT_EQ((*ops)["rows"][0]["calls"], 3);
  EXPECT_NEAR((*ops)["rows"][0]["host_total_s"].get<double>(), 3 * 600e-6, 1e-15);
  for (const char* csv : {"operator_view.csv", "kernel_view.csv", "annotations.csv"})
    EXPECT_TRUE(std::ifstream(dir + "/b/" + csv).good()) << csv;
}

TEST(Analyze, GeneratedRanksAsJsonOnStdout) {
  std::string dir = testutil::FreshTempDir();
  ASSERT_EQ(WriteGeneratedRanks(dir).size(), 2u);
  auto r = RunProcess({TRAINPROF_CLI, "analyze", dir, "--format", "json", "--run-dir", dir + "/out",
                       "--db", "off"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json rep = nlohmann::json::parse(r.out);
  EXPECT_EQ(rep["meta"]["ranks"], 2);
  const nlohmann::json* g = Table(*Section(rep, "gpu"), "gpu_summary");
  ASSERT_NE(g, nullptr);
  ASSERT_EQ((*g)["rows"].size(), 2u);
  // 3 × 150.5 µs of kernels per 1,000 µs step, on both ranks (rank 1's slowdown scales both).
  for (const auto& row : (*g)["rows"])
    EXPECT_NEAR(row["utilization_pct"].get<double>(), 45.15, 1e-9) << row["rank"];
}

// Three steps; the profiler stopped before the last step's kernels were captured.
std::string TailCutTrace() {
  std::string ev;
  auto add = [&](const std::string& e) { ev += (ev.empty() ? "" : ",\n") + e; };
  for (int s = 0; s < 3; ++s) {
    int t = 1000 + s * 1000;
    add(R"({"ph":"X","cat":"user_annotation","name":"ProfilerStep#)" + std::to_string(s + 1) +
        R"(","pid":1,"tid":1,"ts":)" + std::to_string(t) + R"(,"dur":900})");
    for (int k = 0; k < 2; ++k) {
      int c = s * 10 + k;
      add(R"({"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":)" +
          std::to_string(t + 100 + k * 100) + R"(,"dur":10,"args":{"correlation":)" +
          std::to_string(c) + "}}");
      if (s < 2)
        add(R"({"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":)" +
            std::to_string(t + 150 + k * 100) + R"(,"dur":80,"args":{"correlation":)" +
            std::to_string(c) + R"(,"stream":7,"device":0}})");
    }
  }
  return "{\"traceEvents\": [\n" + ev + "\n]}";
}

// Two models' traces are often one file name in two folders: the run history names each run by
// its folder and file, so `runs list` tells them apart.
TEST(Analyze, TheRunHistoryNamesARunByFolderAndFile) {
  std::string dir = testutil::FreshTempDir();
  for (const char* machine : {"h100", "mi300x"}) {
    std::filesystem::create_directories(dir + "/" + machine);
    std::ofstream(dir + "/" + machine + "/trace.json") << TailCutTrace();
    auto r = RunProcess({TRAINPROF_CLI, "analyze", dir + "/" + machine + "/trace.json", "-q",
                         "--run-dir", dir + "/out_" + machine, "--db", dir + "/runs.db"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  auto runs = RunProcess({TRAINPROF_CLI, "runs", "list", "--db", dir + "/runs.db"});
  EXPECT_NE(runs.out.find("  h100/trace.json  "), std::string::npos) << runs.out;
  EXPECT_NE(runs.out.find("  mi300x/trace.json  "), std::string::npos) << runs.out;
}

TEST(Analyze, TrailingStepWithoutGpuWorkIsDroppedUnlessAskedFor) {
  std::string dir = testutil::FreshTempDir();
  std::ofstream(dir + "/rank0.json") << TailCutTrace();
  auto r = RunProcess({TRAINPROF_CLI, "analyze", dir + "/rank0.json", "--run-dir", dir + "/a"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("dropped ProfilerStep#3 as incomplete"), std::string::npos) << r.out;
  nlohmann::json a = ReadJson(dir + "/a/report.json");
  EXPECT_EQ((*Section(a, "overview"))["metrics"]["steps"]["value"], 2);
  r = RunProcess(
      {TRAINPROF_CLI, "analyze", dir + "/rank0.json", "--steps", "all", "--run-dir", dir + "/b"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json b = ReadJson(dir + "/b/report.json");
  EXPECT_EQ((*Section(b, "overview"))["metrics"]["steps"]["value"], 3);
  // Step 1 is its host range (1000..1900 µs; its kernels end at 1330). Kernels 1150..1230 and
  // 1250..1330; of the launches 1100..1110 and 1200..1210 the second is under a kernel, which
  // ranks higher, so Runtime gets 10 µs.
  const auto& row = (*Table(*Section(a, "overview"), "step_breakdown"))["rows"][0];
  EXPECT_NEAR(row["step_time_s"].get<double>(), 900e-6, 1e-12);
  EXPECT_NEAR(row["kernel_s"].get<double>(), 160e-6, 1e-12);
  EXPECT_NEAR(row["runtime_s"].get<double>(), 10e-6, 1e-12);
}

TEST(Analyze, HtaCompatReproducesHtaTemporalBreakdown) {
  TRAINPROF_SKIP_WITHOUT_SHARED_TRACES();
  std::string dir = testutil::FreshTempDir();
  auto r = RunProcess({TRAINPROF_CLI, "analyze", kTraces + "trace_diff_control", "--hta-compat",
                       "--format", "json", "--run-dir", dir});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json rep = nlohmann::json::parse(r.out);
  nlohmann::json ex = ReadJson(kTraces + "expected/trace_diff_control.hta.json");
  const auto& row = (*Table(*Section(rep, "hta"), "temporal_breakdown"))["rows"][0];
  EXPECT_NEAR(row["idle_s"].get<double>() * 1e6, ex["temporal"]["3"]["idle_time(us)"].get<double>(),
              ex["temporal"]["3"]["idle_time(us)"].get<double>() * 0.005);
  EXPECT_NEAR(row["compute_pct"].get<double>(),
              ex["temporal"]["3"]["compute_time_pctg"].get<double>(), 0.1);
}

struct BadInput {
  const char* name;
  std::string content;  // written to <dir>/<name>
  const char* expected_after_path;
};

TEST(Analyze, BadInputGivesOneLineAndExit2) {
  const BadInput cases[] = {
      {"not_json.json", "<html>",
       ": byte 0 (line 1, column 1): not JSON: a trace starts with '{' or '['"},
      {"not_trace.json", "{\"a\": 1}",
       ": byte 8 (line 1, column 9): not a trace: valid JSON but no \"traceEvents\" array"},
      {"cut.json", "{\"traceEvents\": [{\"ph\": \"X\"",
       ": byte 17 (line 1, column 18): the JSON is cut short before the first event (truncated "
       "file)"},
      {"bad.json.gz", std::string("\x1f\x8b\x08\x00garbage-not-deflate", 23), ": compressed byte"},
  };
  for (const BadInput& c : cases) {
    std::string dir = testutil::FreshTempDir();
    std::string path = dir + "/" + c.name;
    std::ofstream(path, std::ios::binary) << c.content;
    auto r = RunProcess({TRAINPROF_CLI, "analyze", path, "--run-dir", dir + "/out"});
    EXPECT_EQ(r.exit_code, 2) << c.name;
    EXPECT_EQ(r.err.rfind("trainprof: " + path + c.expected_after_path, 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  std::string empty = testutil::FreshTempDir();
  auto r = RunProcess({TRAINPROF_CLI, "analyze", empty});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no trace files in this folder"), std::string::npos) << r.err;
  r = RunProcess({TRAINPROF_CLI, "analyze", empty + "/nope"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no such file or folder"), std::string::npos) << r.err;
}

TEST(Analyze, NothingToAnalyseIsAnErrorNotACleanBill) {
  std::string dir = testutil::FreshTempDir();
  std::ofstream(dir + "/empty.json") << "{\"traceEvents\": []}";
  testutil::ProcessResult r = RunProcess({TRAINPROF_CLI, "analyze", dir + "/empty.json",
                                          "--run-dir", dir + "/out", "--db", dir + "/h.db"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "trainprof: " + dir +
                       "/empty.json: nothing to analyse: the trace holds no events (was the "
                       "profiler stopped before its first active step?)\n");
  EXPECT_EQ(r.out, "");
  EXPECT_FALSE(std::ifstream(dir + "/out/report.json").good()) << "no report, no run recorded";
  EXPECT_FALSE(std::ifstream(dir + "/h.db").good());
  // Events but no ProfilerStep: the whole trace is one step, which is something to analyse.
  std::ofstream(dir + "/nostep.json")
      << R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1,
             "tid": 1, "ts": 10, "dur": 5}]})";
  r = RunProcess(
      {TRAINPROF_CLI, "analyze", dir + "/nostep.json", "--run-dir", dir + "/b", "--db", "off"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// Wrong answer 1: a trace cut at any tenth of its length has lost GPU events (Kineto writes them
// last), so it gets an error finding first, a line on stderr, exit 4 and no GPU figure; the
// whole trace gets its GPU figure and exit 0. On a generated trace, and on the shared real
// traces when they are beside the checkout.
TEST(Analyze, CutTracesGiveNoGpuFigureAndAnErrorFinding) {
  std::string dir = testutil::FreshTempDir();
  WriteGeneratedRanks(dir);
  std::vector<std::string> texts = {testutil::ReadText(dir + "/rank0.pt.trace.json")};
  if (testutil::SharedTracesPresent()) {
    texts.push_back(testutil::GunzipFile(kTraces + "trace_diff_control/control.json.gz"));
  }
  auto utilization = [](const nlohmann::json& rep) {
    return (*Section(rep, "gpu"))["metrics"].contains("avg_utilization_pct");
  };
  for (size_t t = 0; t < texts.size(); ++t) {
    const std::string& text = texts[t];
    for (int tenth = 1; tenth <= 10; ++tenth) {
      std::string path = dir + "/cut" + std::to_string(tenth) + ".json";
      std::ofstream(path) << text.substr(0, text.size() * tenth / 10);
      // A folder per trace and cut: a run folder is not written twice.
      std::string out = fmt::format("{}/out{}_{}", dir, t, tenth);
      auto r = RunProcess({TRAINPROF_CLI, "analyze", path, "--run-dir", out, "--db", "off"});
      nlohmann::json rep = ReadJson(out + "/report.json");
      const nlohmann::json& first = (*Section(rep, "recommendations"))["findings"][0];
      if (tenth == 10) {
        EXPECT_EQ(r.exit_code, 0) << r.err;
        EXPECT_TRUE(utilization(rep));
        EXPECT_NE(first["severity"], "error");
        continue;
      }
      EXPECT_EQ(r.exit_code, 4) << tenth << "0 %: " << r.err;
      EXPECT_NE(r.err.find(path + ": the JSON is cut short at byte"), std::string::npos) << r.err;
      EXPECT_FALSE(utilization(rep)) << tenth << "0 %";
      EXPECT_EQ(first["severity"], "error");
      EXPECT_NE(first["text"].get<std::string>().find("cut short"), std::string::npos);
      EXPECT_EQ((*Section(rep, "data_quality"))["metrics"]["errors"]["value"], 1);
    }
    auto ok =
        RunProcess({TRAINPROF_CLI, "analyze", dir + "/cut5.json", "--run-dir",
                    fmt::format("{}/allowed{}", dir, t), "--db", "off", "--allow-data-errors"});
    EXPECT_EQ(ok.exit_code, 0) << ok.err;
  }
}

// Under ASan: g++ says so with __SANITIZE_ADDRESS__, clang with __has_feature.
#if defined(__SANITIZE_ADDRESS__)
#define TRAINPROF_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TRAINPROF_TEST_ASAN 1
#endif
#endif

#ifdef TRAINPROF_TEST_ASAN
// ASan keeps freed blocks in a 256 MiB quarantine and adds shadow memory: allocator overhead that
// is not the reader's. Buffering the string would still need more than 1 GiB.
constexpr long kSanitizerExtraMiB = 256;
#else
constexpr long kSanitizerExtraMiB = 0;
#endif

// Wrong answer 8: a ~1 MB .gz whose JSON holds one 1 GiB string (1,024 gzip members of 1 MiB of
// 'a' inside an event's name) is analysed in at most 256 MB, the string skipped and said.
TEST(Analyze, OneGiantStringIsSkippedInBoundedMemory) {
  std::string dir = testutil::FreshTempDir();
  const std::string event =
      R"({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 5})";
  std::string gz =
      testutil::GzipText(R"({"traceEvents": [)" + event + R"(, {"ph": "X", "name": ")");
  std::string mib = testutil::GzipText(std::string(size_t{1} << 20, 'a'));
  for (int i = 0; i < 1024; ++i) gz += mib;
  gz += testutil::GzipText(R"(", "ts": 1, "dur": 1}, )" + event + "]}");
  ASSERT_LT(gz.size(), size_t{2} << 20);
  std::ofstream(dir + "/giant.json.gz", std::ios::binary) << gz;
  testutil::ProcessResult r = RunProcess(
      {TRAINPROF_CLI, "analyze", dir + "/giant.json.gz", "--run-dir", dir + "/out", "--db", "off"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  rusage ru{};
  getrusage(RUSAGE_CHILDREN, &ru);
  EXPECT_LE(ru.ru_maxrss, (256 + kSanitizerExtraMiB) * 1024) << "peak RSS in KiB";
  nlohmann::json rep = ReadJson(dir + "/out/report.json");
  EXPECT_NE(rep.dump().find("oversized_value"), std::string::npos);
  EXPECT_EQ(rep["meta"]["json_bytes"].get<int64_t>() > (int64_t{1} << 30), true);
}

// One step: an aten::mm whose kernel (not a Tensor Core kernel) runs on a GPU of `major`.x.
std::string MatmulTrace(int major) {
  return fmt::format(
      R"({{"deviceProperties": [{{"id": 0, "name": "GPU", "computeMajor": {}, "computeMinor": 0,
          "numSms": 80}}],
        "traceEvents": [
        {{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1,
          "ts": 0, "dur": 1000}},
        {{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10,
          "dur": 50}},
        {{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
          "ts": 20, "dur": 5, "args": {{"correlation": 1}}}},
        {{"ph": "X", "cat": "kernel", "name": "volta_sgemm_128x64_nn", "pid": 0, "tid": 7,
          "ts": 30, "dur": 900, "args": {{"correlation": 1, "stream": 7, "device": 0}}}}]}})",
      major);
}

TEST(Analyze, TensorCoreAdviceFitsTheComputeCapability) {
  for (int major : {7, 8}) {
    std::string dir = testutil::FreshTempDir();
    std::ofstream(dir + "/t.json") << MatmulTrace(major);
    auto r = RunProcess(
        {TRAINPROF_CLI, "analyze", dir + "/t.json", "--run-dir", dir + "/out", "--db", "off"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const bool fp16_only = r.out.find("Tensor Cores take fp16 only") != std::string::npos;
    const bool tf32 = r.out.find("allow_tf32") != std::string::npos;
    EXPECT_EQ(fp16_only, major == 7) << r.out;
    EXPECT_EQ(tf32, major == 8) << r.out;
  }
}

// A TensorBoard log dir: two runs under <run>/plugins/profile/<time>/, next to a config.json, a
// dangling symlink and a symlink loop.
TEST(Analyze, LogDirRunsAreSeparateAndNonTracesAreSkipped) {
  namespace fs = std::filesystem;
  const std::string dir = testutil::FreshTempDir();
  const std::string trace =
      testutil::ReadText(testutil::SourceDir() + "/fuzz/corpus/kineto/kineto_small.json");
  for (const char* run : {"runA/plugins/profile/2024_01_01", "runB/plugins/profile/2024_01_02"}) {
    fs::create_directories(dir + "/logs/" + run);
    std::ofstream(dir + "/logs/" + run + "/host.pt.trace.json") << trace;
  }
  std::ofstream(dir + "/logs/config.json") << "{\"lr\": 0.1}";
  fs::create_symlink("nowhere.json", dir + "/logs/dangling.json");
  fs::create_symlink("loop", dir + "/logs/loop");
  auto r = RunProcess(
      {TRAINPROF_CLI, "analyze", dir + "/logs", "--run-dir", dir + "/out", "--db", "off"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("2 runs in " + dir + "/logs"), std::string::npos) << r.err;
  // The config.json is the only file of its folder: that folder is no run, said on stderr.
  EXPECT_NE(r.err.find("trainprof: skipped: " + dir + "/logs/config.json: byte 11"),
            std::string::npos)
      << r.err;
  for (const char* out : {"/out/run1", "/out/run2"}) {
    nlohmann::json rep = ReadJson(dir + out + "/report.json");
    EXPECT_EQ(rep["meta"]["ranks"], 1) << "each run has its own single rank";
    std::set<std::string> skipped;
    for (const auto& d : rep["diagnostics"]) {
      if (d["name"] == "input_skipped") skipped.insert(d["message"].get<std::string>());
    }
    ASSERT_EQ(skipped.size(), 2u);
    auto has = [&](const std::string& text) {
      return std::any_of(skipped.begin(), skipped.end(),
                         [&](const std::string& m) { return m.find(text) != std::string::npos; });
    };
    EXPECT_TRUE(has("dangling.json: skipped"));
    EXPECT_TRUE(has("loop: skipped: Too many levels of symbolic links"));
  }
}

TEST(Analyze, PerEventProblemsAreListedInTheReport) {
  std::string dir = testutil::FreshTempDir();
  std::ofstream(dir + "/rank0.json") << R"({"traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": -5},
    {"ph": "X", "cat": "strange", "name": "x", "pid": 1, "tid": 1, "ts": 10, "dur": 5},
    {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 20, "dur": 30},
    {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 60}
  ]})";
  auto r = RunProcess({TRAINPROF_CLI, "analyze", dir + "/rank0.json", "--format", "json",
                       "--run-dir", dir + "/out"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json rep = nlohmann::json::parse(r.out);
  std::map<std::string, int64_t> diag;
  for (const auto& d : rep["diagnostics"]) diag[d["name"]] = d["count"];
  EXPECT_EQ(diag["bad_time"], 1);
  EXPECT_EQ(diag["unknown_category"], 1);
  EXPECT_EQ(diag["missing_fields"], 1);
  // The rest is analysed: one step of 100 µs, 30 µs of it CPU Exec.
  const auto& row = (*Table(*Section(rep, "overview"), "step_breakdown"))["rows"][0];
  EXPECT_NEAR(row["step_time_s"].get<double>(), 100e-6, 1e-12);
  EXPECT_NEAR(row["cpu_exec_s"].get<double>(), 30e-6, 1e-12);
}

TEST(Diff, ControlAgainstTest) {
  TRAINPROF_SKIP_WITHOUT_SHARED_TRACES();
  std::string dir = testutil::FreshTempDir();
  auto r = RunProcess({TRAINPROF_CLI, "diff", kTraces + "trace_diff_control",
                       kTraces + "trace_diff_test", "--format", "json", "--run-dir", dir});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json rep = nlohmann::json::parse(r.out);
  EXPECT_EQ(rep["kind"], "diff");
  const nlohmann::json* s = Section(rep, "diff");
  ASSERT_NE(s, nullptr);
  double ratio = (*s)["metrics"]["step_time_ratio"]["value"];
  EXPECT_GT(ratio, 1.0);  // the V100 run is slower per step than the A100 run
  const nlohmann::json* ops = Table(*s, "operator_diff");
  ASSERT_NE(ops, nullptr);
  bool added = false;
  for (const auto& row : (*ops)["rows"]) added |= row["change"] == "added";
  EXPECT_TRUE(added);
  // An A100 against a V100: the header says so, and kernels are compared by family (their names
  // differ by architecture), operators and categories by GPU time.
  EXPECT_EQ(rep["meta"]["device_a"], "NVIDIA A100-PG509-200 (sm_80)");
  EXPECT_EQ(rep["meta"]["device_b"], "Tesla V100-SXM2-16GB (sm_70)");
  EXPECT_EQ(Table(*s, "kernel_diff"), nullptr);
  const nlohmann::json* families = Table(*s, "kernel_family_diff");
  ASSERT_NE(families, nullptr);
  bool gemm = false;
  for (const auto& row : (*families)["rows"])
    gemm |= row["name"] == "GEMM / convolution (matrix cores)";
  EXPECT_TRUE(gemm);
  // The diff page has its charts: the categories' and the top changes' deltas.
  std::ifstream page(dir + "/report.html");
  const std::string html((std::istreambuf_iterator<char>(page)), std::istreambuf_iterator<char>());
  for (const char* chart : {"step_time_diff", "operator_diff", "operator_gpu_diff", "category_diff",
                            "kernel_family_diff"})
    EXPECT_NE(html.find(std::string("data-chart=\"") + chart + "\""), std::string::npos) << chart;
}

// --critical-path with an annotation and instance: HTA's answer for critical_path_simple_add
// reaches report.json as the section's metrics.
TEST(Analyze, CriticalPathOfAnAnnotationInstance) {
  TRAINPROF_SKIP_WITHOUT_SHARED_TRACES();
  std::string dir = testutil::FreshTempDir();
  auto r = RunProcess({TRAINPROF_CLI, "analyze", kTraces + "critical_path_simple_add",
                       "--critical-path", "[param|pytorch.model.alex_net|0|0|0|measure|forward]:1",
                       "--run-dir", dir, "--db", "off"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json rep = ReadJson(dir + "/report.json");
  const nlohmann::json* cp = Section(rep, "critical_path");
  ASSERT_NE(cp, nullptr);
  EXPECT_NEAR((*cp)["metrics"]["cpu_bound_pct"]["value"].get<double>(), 99.779, 0.01);
  EXPECT_NEAR((*cp)["metrics"]["length_s"]["value"].get<double>(), 0.241724, 1e-6);
  EXPECT_EQ((*Table(*cp, "critical_path"))["rows"].size(), 1u);
}

// --critical-path without a value: one row per rank and analysed step; without the flag, no
// section.
TEST(Analyze, CriticalPathOfEveryStep) {
  std::string dir = testutil::FreshTempDir();
  std::filesystem::create_directories(dir + "/traces");
  WriteGeneratedRanks(dir + "/traces");
  auto r = RunProcess({TRAINPROF_CLI, "analyze", dir + "/traces", "--critical-path", "--run-dir",
                       dir + "/a", "--db", "off"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json rep = ReadJson(dir + "/a/report.json");
  const nlohmann::json* cp = Section(rep, "critical_path");
  ASSERT_NE(cp, nullptr);
  EXPECT_EQ((*Table(*cp, "critical_path"))["rows"].size(), 2u * 3u);
  EXPECT_TRUE((*cp)["metrics"].contains("gpu_kernel_launch_overhead_pct"));
  // --critical-path before PATH takes the path as its annotation: the error says so.
  auto before = RunProcess({TRAINPROF_CLI, "analyze", "--critical-path", dir + "/traces"});
  EXPECT_EQ(before.exit_code, 2);
  EXPECT_NE(before.err.find("PATH is missing: --critical-path took " + dir +
                            "/traces as its ANNOTATION. Put --critical-path after PATH"),
            std::string::npos)
      << before.err;
  // The paths as a trace for Perfetto: a process per rank and step, edges and marked events.
  nlohmann::json tr = ReadJson(dir + "/a/critical_path.trace.json");
  std::set<std::string> processes;
  int edges = 0, critical = 0;
  for (const auto& e : tr["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") processes.insert(e["args"]["name"]);
    if (e["ph"] == "X" && e["args"].contains("edge")) ++edges;
    if (e["ph"] == "X" && e["args"].contains("critical")) ++critical;
  }
  EXPECT_EQ(processes.size(), 6u);
  EXPECT_TRUE(processes.count("rank 1 critical path: ProfilerStep#2")) << tr.dump().substr(0, 500);
  EXPECT_GT(edges, 0);
  EXPECT_GT(critical, 0);
  r = RunProcess(
      {TRAINPROF_CLI, "analyze", dir + "/traces", "--run-dir", dir + "/b", "--db", "off"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Section(ReadJson(dir + "/b/report.json"), "critical_path"), nullptr);
}

}  // namespace

// report.html of real analyses: its structure (sections, charts, tables, findings) is golden.
class AnalyzeHtml : public ::testing::TestWithParam<std::string> {};

TEST_P(AnalyzeHtml, StructureMatchesGolden) {
  TRAINPROF_SKIP_WITHOUT_SHARED_TRACES();
  std::string dir = testutil::FreshTempDir();
  auto r = RunProcess({TRAINPROF_CLI, "analyze", kTraces + GetParam(), "--run-dir", dir});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(
      testutil::MatchesGoldenJson("html/analyze_" + GetParam() + ".json",
                                  testutil::HtmlOutline(testutil::ReadText(dir + "/report.html"))));
}

INSTANTIATE_TEST_SUITE_P(Shared, AnalyzeHtml,
                         ::testing::Values("trace_diff_control", "trace_filter", "cpu_only"));
