// `trainprof analyze --summary-only` + `trainprof merge`, and `mpirun trainprof analyze --mpi`,
// end to end: each must write the report.json that analysing every rank file at once writes,
// less what belongs to one run (its time, its folder, the paths it was given). The input is
// generated (util/trace_gen.h): four ranks with skewed clocks, an all-reduce per step, and rank 2
// computing longer, so the distributed section, the straggler and the critical path are there.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "util/gen_world.h"
#include "util/golden.h"
#include "util/process.h"
#include "util/trace_gen.h"

namespace {

namespace testutil = trainprof::testutil;
using testutil::RunProcess;

constexpr int64_t kUs = 1000;
const char* kGemm = "sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x32_kernel";
const char* kAllReduce = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, ncclWork*)";

testutil::GenTrace RankSpec(int64_t rank, int64_t ranks) {
  const int64_t compute = rank == 2 ? 1400 * kUs : 1000 * kUs, latest = 1400 * kUs;
  testutil::GenTrace t;
  t.world_size = ranks;
  for (int s = 0; s < 4; ++s) {
    testutil::GenStep st{.host_dur_ns = 3000 * kUs};
    st.gpu_ops.push_back(
        {.name = kGemm, .start_ns = 100 * kUs, .dur_ns = compute, .launch_delay_ns = 50 * kUs});
    testutil::GenGpuOp ar{.name = kAllReduce,
                          .stream = 9,
                          .start_ns = 100 * kUs + compute,
                          .dur_ns = latest - compute + 300 * kUs,
                          .launch_delay_ns = 60 * kUs};
    ar.collective = testutil::GenCollective{.seq = s, .nelems = 1 << 20, .group_size = ranks};
    st.gpu_ops.push_back(ar);
    t.steps.push_back(st);
  }
  return t;
}

// A folder `tmp`/traces of `ranks` generated rank files.
std::string GeneratedRanks(const std::string& tmp, int64_t ranks) {
  const std::string dir = tmp + "/traces";
  std::filesystem::create_directories(dir);
  for (int64_t r = 0; r < ranks; ++r) {
    auto g = testutil::GenerateKinetoTrace(RankSpec(r, ranks),
                                           {.rank = r, .skew_ns = r * 1'234'567 - 2'000'000});
    EXPECT_TRUE(g.ok()) << g.status().message();
    if (g.ok()) std::ofstream(fmt::format("{}/rank{}.pt.trace.json", dir, r)) << g->json;
  }
  return dir;
}

// report.json without what differs from one run of the same input to the next.
nlohmann::json Comparable(const std::string& run_dir, bool keep_input = true) {
  std::ifstream in(run_dir + "/report.json");
  nlohmann::json r = nlohmann::json::parse(in);
  for (const char* key : {"created_utc", "run_dir"}) r["meta"].erase(key);
  std::vector<std::string> files;
  for (auto& [k, v] : r["meta"].items())
    if (k.starts_with("files.")) files.push_back(k);
  for (const std::string& k : files) r["meta"].erase(k);
  if (!keep_input) {
    r["meta"].erase("input");
    r.erase("title");
  }
  return r;
}

std::vector<std::string> Cli(std::vector<std::string> args) {
  args.insert(args.begin(), TRAINPROF_CLI);
  for (const char* a : {"--db", "off"}) args.push_back(a);
  return args;
}

#ifdef TRAINPROF_HAVE_MPI
// `mpirun` on the PATH as `var`, or the test skips saying what to install.
#define MPIRUN_OR_SKIP(var)                               \
  const std::string var = testutil::FindOnPath("mpirun"); \
  if (var.empty()) GTEST_SKIP() << "mpirun is not installed (apt-get install openmpi-bin)"

// `mpirun -n N trainprof analyze TRACES --mpi --run-dir RUN_DIR`; `more`: arguments of
// trainprof; `mpi`: of mpirun (-x VAR=value).
testutil::ProcessResult AnalyzeUnderMpi(const std::string& mpirun, const char* n,
                                        const std::string& traces, const std::string& run_dir,
                                        const std::vector<std::string>& more = {},
                                        const std::vector<std::string>& mpi = {}) {
  std::vector<std::string> args = {mpirun, "--allow-run-as-root", "--oversubscribe", "-n", n};
  args.insert(args.end(), mpi.begin(), mpi.end());
  std::vector<std::string> cli = {"analyze", traces,       "--mpi", "--run-dir",
                                  run_dir,   "--progress", "off"};
  cli.insert(cli.end(), more.begin(), more.end());
  for (const std::string& a : Cli(cli)) args.push_back(a);
  return RunProcess(args);
}
#endif

TEST(Merge, SummariesMergeToTheWholeReport) {
  const std::string tmp = testutil::FreshTempDir(), traces = GeneratedRanks(tmp, 4);
  auto whole = RunProcess(Cli({"analyze", traces, "--run-dir", tmp + "/whole", "--critical-path"}));
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  auto sum = RunProcess(
      Cli({"analyze", traces, "--summary-only", "-o", tmp + "/sums", "--critical-path"}));
  ASSERT_EQ(sum.exit_code, 0) << sum.err;
  EXPECT_TRUE(std::filesystem::exists(tmp + "/sums/rank3.pt.trace.json.tpsum"));
  EXPECT_FALSE(std::filesystem::exists(tmp + "/sums/report.json"));
  auto merged = RunProcess(Cli({"merge", tmp + "/sums", "--run-dir", tmp + "/merged"}));
  ASSERT_EQ(merged.exit_code, 0) << merged.err;
  const nlohmann::json a = Comparable(tmp + "/whole"), b = Comparable(tmp + "/merged");
  EXPECT_EQ(a, b) << "whole:\n"
                  << a.dump(1).substr(0, 3000) << "\nmerged:\n"
                  << b.dump(1).substr(0, 3000);
  // The report has what a merge could lose: the ranks' collectives and the straggler.
  EXPECT_NE(a.dump().find("\"distributed\""), std::string::npos);
  EXPECT_NE(a.dump().find("straggler"), std::string::npos);
  EXPECT_NE(a.dump().find("\"critical_path\""), std::string::npos);
  // critical_path.trace.json has the clock offsets applied: the ranks' clocks differ by 1.2 ms
  // steps, yet every rank's path of a step starts at the same moment.
  std::ifstream in(tmp + "/merged/critical_path.trace.json");
  const nlohmann::json trace = nlohmann::json::parse(in);
  std::map<int64_t, std::string> window;  // pid -> "ProfilerStep#2"
  std::map<int64_t, double> first;        // pid -> its first event's ts (µs)
  for (const auto& e : trace["traceEvents"]) {
    const int64_t pid = e.value("pid", int64_t{0});
    if (e["ph"] == "M" && e["name"] == "process_name") {
      std::string name = e["args"]["name"];
      window[pid] = name.substr(name.find(": ") + 2);
    } else if (e["ph"] == "X") {
      first[pid] =
          first.count(pid) ? std::min(first[pid], e["ts"].get<double>()) : e["ts"].get<double>();
    }
  }
  std::map<std::string, std::pair<double, double>> span;  // window -> earliest, latest start
  for (const auto& [pid, w] : window) {
    auto [it, fresh] = span.try_emplace(w, first[pid], first[pid]);
    it->second = {std::min(it->second.first, first[pid]), std::max(it->second.second, first[pid])};
  }
  EXPECT_EQ(span.size(), 4u);
  for (const auto& [w, s] : span) EXPECT_LT(s.second - s.first, 1.0) << w;
}

// One job per rank file (a Slurm array), each summary in its own folder.
TEST(Merge, RanksSummarisedApartMergeToo) {
  const std::string tmp = testutil::FreshTempDir(), traces = GeneratedRanks(tmp, 3);
  auto whole = RunProcess(Cli({"analyze", traces, "--run-dir", tmp + "/whole"}));
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  std::vector<std::string> merge = {"merge"};
  for (int r = 0; r < 3; ++r) {
    const std::string out = fmt::format("{}/job{}", tmp, r);
    auto s = RunProcess(Cli({"analyze", fmt::format("{}/rank{}.pt.trace.json", traces, r),
                             "--summary-only", "-o", out}));
    ASSERT_EQ(s.exit_code, 0) << s.err;
    merge.push_back(out);
  }
  for (const char* a : {"--run-dir", ""}) merge.push_back(a);
  merge.back() = tmp + "/merged";
  auto m = RunProcess(Cli(merge));
  ASSERT_EQ(m.exit_code, 0) << m.err;
  EXPECT_EQ(Comparable(tmp + "/whole", false), Comparable(tmp + "/merged", false));
}

TEST(Merge, RefusesSummariesOfDifferentOptionsAndCorruptFiles) {
  const std::string tmp = testutil::FreshTempDir(), traces = GeneratedRanks(tmp, 2);
  auto a = RunProcess(
      Cli({"analyze", traces + "/rank0.pt.trace.json", "--summary-only", "-o", tmp + "/s"}));
  ASSERT_EQ(a.exit_code, 0) << a.err;
  auto b = RunProcess(Cli({"analyze", traces + "/rank1.pt.trace.json", "--summary-only", "-o",
                           tmp + "/s", "--steps", "all"}));
  ASSERT_EQ(b.exit_code, 0) << b.err;
  auto m = RunProcess(Cli({"merge", tmp + "/s", "--run-dir", tmp + "/m"}));
  EXPECT_EQ(m.exit_code, 2);
  EXPECT_NE(m.err.find("other options"), std::string::npos) << m.err;
  std::ofstream(tmp + "/s/rank1.pt.trace.json.tpsum") << "TPSUMMARY\x01";
  m = RunProcess(Cli({"merge", tmp + "/s", "--run-dir", tmp + "/m"}));
  EXPECT_EQ(m.exit_code, 2);
  EXPECT_NE(m.err.find("rank1.pt.trace.json.tpsum"), std::string::npos) << m.err;
  m = RunProcess(Cli({"merge", tmp + "/empty-does-not-exist"}));
  EXPECT_EQ(m.exit_code, 2);
  // Told by its bytes, whatever its name: a trace named like a summary is refused as a trace.
  std::filesystem::copy_file(traces + "/rank0.pt.trace.json", tmp + "/renamed.tpsum");
  m = RunProcess(Cli({"merge", tmp + "/renamed.tpsum"}));
  EXPECT_EQ(m.exit_code, 2);
  EXPECT_NE(m.err.find(tmp + "/renamed.tpsum: a PyTorch profiler trace, not a rank summary or "
                             "digest (`trainprof analyze` reads traces)"),
            std::string::npos)
      << m.err;
  // And a summary given to analyze says what reads it.
  auto an = RunProcess(Cli({"analyze", tmp + "/s/rank0.pt.trace.json.tpsum"}));
  EXPECT_EQ(an.exit_code, 2);
  EXPECT_NE(an.err.find("a trainprof rank summary, not a trace (trainprof merge reads it)"),
            std::string::npos)
      << an.err;
}

// mpirun -n 2 == -n 1 == no MPI. Skips when mpirun is not installed, or trainprof was built
// without MPI (then --mpi must say so).
TEST(Mpi, TwoProcessesWriteTheSameReport) {
  const std::string tmp = testutil::FreshTempDir(), traces = GeneratedRanks(tmp, 4);
  auto plain = RunProcess(Cli({"analyze", traces, "--run-dir", tmp + "/plain"}));
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
#ifndef TRAINPROF_HAVE_MPI
  auto no = RunProcess(Cli({"analyze", traces, "--mpi", "--run-dir", tmp + "/x"}));
  EXPECT_EQ(no.exit_code, 2);
  EXPECT_NE(no.err.find("without MPI"), std::string::npos) << no.err;
  GTEST_SKIP() << "trainprof was built without MPI";
#else
  MPIRUN_OR_SKIP(mpirun);
  for (const char* n : {"1", "2"}) {
    auto r = AnalyzeUnderMpi(mpirun, n, traces, tmp + "/mpi" + n);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(Comparable(tmp + "/plain"), Comparable(tmp + "/mpi" + n)) << "mpirun -n " << n;
  }
#endif
}

// 24 ranks (past kInlineRanks: per-rank detail in CSV files, kept in process 0's scratch file):
// the other processes send each result as soon as it is made (TRAINPROF_MPI_STREAM_BYTES=1: a
// message a record, more than the 4 sends that may wait, so the rest goes through their scratch
// file), process 0 takes them between its own files, and every file is as without MPI.
TEST(Mpi, ResultsStreamedWhileReadingMakeTheSameFiles) {
#ifndef TRAINPROF_HAVE_MPI
  GTEST_SKIP() << "trainprof was built without MPI";
#else
  MPIRUN_OR_SKIP(mpirun);
  const std::string tmp = testutil::FreshTempDir(), traces = GeneratedRanks(tmp, 24);
  auto plain = RunProcess(Cli({"analyze", traces, "--run-dir", tmp + "/plain"}));
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  for (const char* n : {"2", "3"}) {
    const std::string out = tmp + "/mpi" + n;
    auto r = AnalyzeUnderMpi(mpirun, n, traces, out, {}, {"-x", "TRAINPROF_MPI_STREAM_BYTES=1"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(Comparable(tmp + "/plain"), Comparable(out)) << "mpirun -n " << n;
    size_t csv = 0;
    for (const auto& e : std::filesystem::directory_iterator(tmp + "/plain")) {
      if (e.path().extension() != ".csv") continue;
      const std::string name = e.path().filename().string();
      EXPECT_EQ(testutil::ReadText(e.path().string()), testutil::ReadText(out + "/" + name))
          << name << ", mpirun -n " << n;
      ++csv;
    }
    EXPECT_GT(csv, 20u);
  }
#endif
}

// The world of util/gen_world.h (rank 5 computes 25 % longer; tensor- and data-parallel groups;
// clocks up to 50 ms apart) with rank 3's file missing and rank 6's cut in half: mpirun with 1, 2
// and 4 processes writes the report of a run without MPI, naming rank 5, the cut file and the
// missing rank.
TEST(Mpi, TheSameCulpritWhateverTheProcessCount) {
#ifndef TRAINPROF_HAVE_MPI
  GTEST_SKIP() << "trainprof was built without MPI";
#else
  MPIRUN_OR_SKIP(mpirun);
  const std::string tmp = testutil::FreshTempDir(), traces = tmp + "/world";
  std::filesystem::create_directories(traces);
  for (const auto& [spec, rank] : testutil::GenerateWorld({})) {
    if (rank.rank == 3) continue;
    auto g = testutil::GenerateKinetoTrace(spec, rank);
    ASSERT_TRUE(g.ok()) << g.status().message();
    const std::string json = rank.rank == 6 ? g->json.substr(0, g->json.size() / 2) : g->json;
    std::ofstream(fmt::format("{}/rank{}.pt.trace.json", traces, rank.rank)) << json;
  }
  auto plain = RunProcess(Cli({"analyze", traces, "--run-dir", tmp + "/plain"}));
  const std::string report = testutil::ReadText(tmp + "/plain/report.json");
  EXPECT_NE(report.find("rank 5 is the straggler: rank 5 arrives last"), std::string::npos);
  EXPECT_NE(report.find("1 of the world's 8 ranks have no trace: 3"), std::string::npos);
  EXPECT_NE(report.find("rank6.pt.trace.json"), std::string::npos);
  const std::string path = testutil::ReadText(tmp + "/plain/cross_rank_path.trace.json");
  EXPECT_NE(path.find("\"rank 5\""), std::string::npos);
  for (const char* n : {"1", "2", "4"}) {
    const std::string digests = tmp + "/digests" + n;
    auto r = AnalyzeUnderMpi(mpirun, n, traces, tmp + "/mpi" + n, {"--digest", digests});
    EXPECT_EQ(r.exit_code, plain.exit_code) << r.out << r.err;
    EXPECT_EQ(Comparable(tmp + "/plain"), Comparable(tmp + "/mpi" + n)) << "mpirun -n " << n;
    EXPECT_EQ(path, testutil::ReadText(tmp + "/mpi" + n + "/cross_rank_path.trace.json")) << n;
    // Each process wrote its own ranks' digests: the 7 ranks read (rank 6's cut file too).
    size_t written = 0;
    for (const auto& e : std::filesystem::directory_iterator(digests))
      written += e.is_regular_file();
    EXPECT_EQ(written, 7u) << n;
  }
#endif
}

// Traces on node-local disks: each "node" (a process's working folder) holds only its own ranks'
// traces under the same relative path, and process 0's holds none. The processes' listings are
// merged, each file is read by a process that sees it, a file cut short is skipped as in a
// folder, and the report is that of all the traces in one folder.
TEST(Mpi, NodeLocalTracesAreReadWhereTheyLie) {
#ifndef TRAINPROF_HAVE_MPI
  GTEST_SKIP() << "trainprof was built without MPI";
#else
  MPIRUN_OR_SKIP(mpirun);
  const std::string tmp = testutil::FreshTempDir(), all = GeneratedRanks(tmp + "/all", 4);
  for (int r = 0; r < 4; ++r) {
    const std::string node = tmp + (r < 2 ? "/a/traces" : "/b/traces");
    std::filesystem::create_directories(node);
    const std::string name = fmt::format("/rank{}.pt.trace.json", r);
    std::filesystem::copy_file(all + name, node + name);
  }
  std::filesystem::create_directories(tmp + "/c");
  for (const std::string& dir : {all, tmp + "/a/traces"})  // cut before its first event
    std::ofstream(dir + "/rank9.pt.trace.json") << R"({"schemaVersion": 1, "traceEvents": [)";
  // One MPI application context per node: `-wdir DIR trainprof analyze traces --mpi ...`.
  auto on = [&](const std::string& dir) {
    std::vector<std::string> args = {"-n", "1", "-wdir", tmp + dir};
    for (const std::string& a : Cli({"analyze", "traces", "--mpi", "--run-dir", tmp + "/out",
                                     "--overwrite", "--progress", "off", "-q"}))
      args.push_back(a);
    return args;
  };
  std::vector<std::string> one = {mpirun, "--allow-run-as-root", "--oversubscribe"};
  std::vector<std::string> three = one;
  for (const std::string& a : on("/all")) one.push_back(a);
  for (const char* dir : {"/c", "/a", "/b"}) {
    if (three.size() > 3) three.push_back(":");
    for (const std::string& a : on(dir)) three.push_back(a);
  }
  auto whole = RunProcess(one);
  ASSERT_EQ(whole.exit_code, 0) << whole.out << whole.err;
  const nlohmann::json expected = Comparable(tmp + "/out");
  auto spread = RunProcess(three);
  ASSERT_EQ(spread.exit_code, 0) << spread.out << spread.err;
  EXPECT_EQ(Comparable(tmp + "/out"), expected);
  const std::string report = testutil::ReadText(tmp + "/out/report.json");
  EXPECT_NE(report.find("rank9.pt.trace.json"), std::string::npos);  // named as skipped
  EXPECT_EQ(report.find("files.5"), std::string::npos);
#endif
}

// `analyze --digest` then `merge` of the digests: the same report without the traces, and with
// --step-range the questions across ranks over other steps.
TEST(Merge, DigestsAskAgainWithoutTheTraces) {
  const std::string tmp = testutil::FreshTempDir(), traces = tmp + "/world";
  std::filesystem::create_directories(traces);
  for (const auto& [spec, rank] : testutil::GenerateWorld({})) {
    auto g = testutil::GenerateKinetoTrace(spec, rank);
    ASSERT_TRUE(g.ok()) << g.status().message();
    std::ofstream(fmt::format("{}/rank{}.pt.trace.json", traces, rank.rank)) << g->json;
  }
  auto whole =
      RunProcess(Cli({"analyze", traces, "--run-dir", tmp + "/whole", "--digest", tmp + "/dig"}));
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  EXPECT_TRUE(std::filesystem::exists(tmp + "/dig/rank_00007.digest.sqlite"));
  std::filesystem::remove_all(traces);
  auto merged = RunProcess(Cli({"merge", tmp + "/dig", "--run-dir", tmp + "/merged"}));
  ASSERT_EQ(merged.exit_code, 0) << merged.err;
  EXPECT_EQ(Comparable(tmp + "/whole"), Comparable(tmp + "/merged"));
  auto window = RunProcess(Cli({"merge", tmp + "/dig", "--step-range", "1-2", "--run-dir",
                                tmp + "/window", "--format", "json"}));
  ASSERT_EQ(window.exit_code, 0) << window.err;
  const nlohmann::json w = Comparable(tmp + "/window");
  EXPECT_EQ(w["meta"]["step_range"], "1-2");
  std::vector<std::string> ids;
  for (const auto& s : w["sections"]) ids.push_back(s["id"]);
  EXPECT_EQ(ids, (std::vector<std::string>{"overview", "distributed", "cross_rank_path",
                                           "recommendations", "data_quality"}));
  EXPECT_NE(w.dump().find("rank 5 is the straggler: rank 5 arrives last at 100% of its "
                          "collectives (allreduce ×4)"),
            std::string::npos)
      << w.dump().substr(0, 2000);
  auto none = RunProcess(Cli({"merge", tmp + "/dig", "--step-range", "8-9"}));
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("no rank has a step numbered 8 to 9"), std::string::npos) << none.err;
}

}  // namespace
