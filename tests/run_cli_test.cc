// `trainprof run -- COMMAND` end to end: exit statuses, the process tree's figures, signal
// forwarding, TRAINPROF_RUN_DIR, traces written into --traces, and the per-process GPU path
// through the fake NVML.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "util/golden.h"
#include "util/process.h"
#include "util/trace_gen.h"

namespace {

namespace testutil = trainprof::testutil;
namespace fs = std::filesystem;
using Json = nlohmann::json;

class RunCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testutil::FreshTempDir();
    setenv("TRAINPROF_DB", (dir_ + "/history.db").c_str(), 1);
    setenv("TRAINPROF_NVML_LIBRARY", "", 1);  // no GPU sampling unless a test asks for it
  }
  // trainprof run -o <dir>/runs --set system.interval_s=0.1 [extra] -- command...
  testutil::ProcessResult Run(const std::vector<std::string>& command,
                              const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv = {
        TRAINPROF_CLI, "run", "-q", "-o", dir_ + "/runs", "--set", "system.interval_s=0.1"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.push_back("--");
    argv.insert(argv.end(), command.begin(), command.end());
    return testutil::RunProcess(argv);
  }
  // The only run folder, or "" when there is none.
  std::string RunDir() {
    std::vector<std::string> dirs;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir_ + "/runs", ec)) {
      if (e.is_directory()) dirs.push_back(e.path().string());
    }
    return dirs.size() == 1 ? dirs[0] : "";
  }
  Json Report() { return Json::parse(testutil::ReadText(RunDir() + "/report.json")); }
  std::string dir_;
};

const Json* Section(const Json& r, const std::string& id) {
  for (const Json& s : r["sections"]) {
    if (s["id"] == id) return &s;
  }
  return nullptr;
}

const Json* Table(const Json& r, const std::string& section, const std::string& id) {
  const Json* s = Section(r, section);
  if (s == nullptr) return nullptr;
  for (const Json& t : (*s)["tables"]) {
    if (t["id"] == id) return &t;
  }
  return nullptr;
}

// The largest value of a column of the system time series.
double SeriesMax(const Json& r, const std::string& key) {
  double m = -1;
  for (const Json& row : (*Table(r, "system", "system_timeseries"))["rows"]) {
    if (row.contains(key) && row[key].is_number()) m = std::max(m, row[key].get<double>());
  }
  return m;
}

TEST_F(RunCli, ExitStatusesAreTheCommandsOrAShells) {
  EXPECT_EQ(Run({"true"}).exit_code, 0);
  EXPECT_EQ(Report()["meta"]["exit_status"], 0);
  fs::remove_all(dir_ + "/runs");
  auto seven = Run({"sh", "-c", "exit 7"});
  EXPECT_EQ(seven.exit_code, 7);
  const Json r = Report();
  EXPECT_EQ((*Section(r, "run"))["findings"][0]["text"].get<std::string>().rfind(
                "the command exited with status 7", 0),
            0u);
  fs::remove_all(dir_ + "/runs");

  auto missing = Run({"no-such-command-xyz"});
  EXPECT_EQ(missing.exit_code, 127);
  EXPECT_EQ(missing.err, "trainprof run: no-such-command-xyz: command not found\n");
  EXPECT_EQ(RunDir(), "") << "no run folder for a command that never ran";

  const std::string script = dir_ + "/not-executable.sh";
  std::ofstream(script) << "echo hi\n";
  chmod(script.c_str(), 0644);
  auto denied = Run({script});
  EXPECT_EQ(denied.exit_code, 126);
  EXPECT_EQ(denied.err, "trainprof run: " + script + ": cannot run: Permission denied\n");
}

TEST_F(RunCli, ProcessTreeTotalsCountEveryChild) {
  // Two children that each hold 64 MiB and burn CPU for 1.5 s, started by a parent that waits.
  const std::string child =
      "import time; b = bytearray(64 << 20)\n"
      "for i in range(0, len(b), 4096): b[i] = 1\n"
      "t = time.time()\n"
      "while time.time() - t < 1.5: pass\n";
  const std::string parent =
      "import subprocess, sys\n"
      "ps = [subprocess.Popen([sys.executable, '-c', " +
      Json(child).dump() +
      "]) for _ in range(2)]\n"
      "sys.exit(sum(p.wait() for p in ps))\n";
  auto r = Run({"/usr/bin/python3", "-c", parent});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json rep = Report();
  EXPECT_EQ(SeriesMax(rep, "process_count"), 3);
  EXPECT_GE(SeriesMax(rep, "process_rss_bytes"), 2.0 * (64 << 20));
  // The run's peak memory (the history's key figure) is the tree's, not trainprof's own.
  EXPECT_DOUBLE_EQ(rep["meta"]["peak_rss_bytes"].get<double>(),
                   SeriesMax(rep, "process_rss_bytes"));
  const Json& rows = (*Table(rep, "system", "processes"))["rows"];
  ASSERT_EQ(rows.size(), 3u);
  int burners = 0;
  for (const Json& p : rows) {
    if (p["peak_rss_bytes"].get<double>() < 64 << 20) continue;
    ++burners;
    EXPECT_GE(p["cpu_s"].get<double>(), 0.3) << p.dump();
    EXPECT_GT(p["ppid"].get<int64_t>(), 0);
    EXPECT_NE(p["command"].get<std::string>().find("bytearray"), std::string::npos);
  }
  EXPECT_EQ(burners, 2);
  EXPECT_TRUE(fs::exists(RunDir() + "/report.html"));
  EXPECT_TRUE(fs::exists(RunDir() + "/trace.json"));
}

TEST_F(RunCli, SignalsSentToTrainprofReachTheCommand) {
  for (int sig : {SIGTERM, SIGINT}) {
    fs::remove_all(dir_ + "/runs");
    testutil::Child c({TRAINPROF_CLI, "run", "-o", dir_ + "/runs", "--", "/usr/bin/python3", "-c",
                       "import signal, sys, time\n"
                       "for s in (signal.SIGTERM, signal.SIGINT):\n"
                       "    signal.signal(s, lambda n, f: sys.exit(40 + n))\n"
                       "print('child ready', file=sys.stderr, flush=True)\n"
                       "time.sleep(60)\n"});
    std::string line;
    ASSERT_TRUE(c.WaitForStderr("child ready", &line));
    c.Signal(sig);
    auto r = c.Wait();
    EXPECT_EQ(r.exit_code, 40 + sig) << r.err;
    const std::string finding = (*Section(Report(), "run"))["findings"][0]["text"];
    EXPECT_NE(finding.find("exited with status " + std::to_string(40 + sig)), std::string::npos)
        << finding;
    EXPECT_NE(finding.find(strsignal(sig)), std::string::npos) << finding;
  }
}

TEST_F(RunCli, TheCommandKnowsTheRunFolder) {
  auto r = Run({"sh", "-c", "echo \"$TRAINPROF_RUN_DIR\" > \"$TRAINPROF_RUN_DIR/seen.txt\""});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string seen = testutil::ReadText(RunDir() + "/seen.txt");
  EXPECT_EQ(seen, fs::absolute(RunDir()).string() + "\n");
}

// A small PyTorch 2.x-style trace: timestamps in µs since baseTimeNanoseconds.
std::string SmallTrace(int64_t base_ns) {
  Json t = {{"schemaVersion", 1},
            {"deviceProperties", {{{"id", 0}, {"name", "A100"}, {"numSms", 108}}}},
            {"baseTimeNanoseconds", base_ns},
            {"traceEvents", Json::array()}};
  auto& e = t["traceEvents"];
  for (int step = 0; step < 3; ++step) {
    const double ts = 1000.0 * step;
    e.push_back({{"ph", "X"},
                 {"cat", "user_annotation"},
                 {"name", "ProfilerStep#" + std::to_string(step)},
                 {"pid", 1},
                 {"tid", 1},
                 {"ts", ts},
                 {"dur", 900}});
    e.push_back({{"ph", "X"},
                 {"cat", "cuda_runtime"},
                 {"name", "cudaLaunchKernel"},
                 {"pid", 1},
                 {"tid", 1},
                 {"ts", ts + 10},
                 {"dur", 5},
                 {"args", {{"correlation", step}}}});
    e.push_back({{"ph", "X"},
                 {"cat", "kernel"},
                 {"name", "volta_sgemm"},
                 {"pid", 0},
                 {"tid", 7},
                 {"ts", ts + 20},
                 {"dur", 600},
                 {"args", {{"correlation", step}, {"stream", 7}, {"device", 0}}}});
  }
  return t.dump();
}

TEST_F(RunCli, TracesWrittenIntoTracesAreAnalysedAndMerged) {
  const std::string traces = dir_ + "/tb";
  fs::create_directories(traces + "/old");
  std::ofstream(traces + "/old/before.pt.trace.json") << SmallTrace(0);
  const std::string src = dir_ + "/src.json";
  const int64_t base_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
  std::ofstream(src) << SmallTrace(base_ns);
  sleep(1);  // the old trace is older than the run by more than the file system's resolution
  auto r = Run({"sh", "-c", "sleep 0.3; cp " + src + " " + traces + "/worker0.1.pt.trace.json"},
               {"--traces", traces});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json rep = Report();
  ASSERT_NE(Section(rep, "overview"), nullptr) << "the analyze sections join the run's report";
  EXPECT_EQ(rep["meta"]["traces"].size(), 1u) << "only the trace written during the run";
  EXPECT_TRUE(fs::exists(RunDir() + "/traces/worker0.1.pt.trace.json"));
  const Json merged = Json::parse(testutil::ReadText(RunDir() + "/trace.json"));
  int kernels = 0, counters = 0;
  double last_counter_us = 0;
  for (const Json& e : merged["traceEvents"]) {
    if (e.value("cat", "") == "kernel") ++kernels;
    if (e["ph"] == "C") {
      ++counters;
      last_counter_us = std::max(last_counter_us, e["ts"].get<double>());
    }
  }
  EXPECT_EQ(kernels, 3);
  EXPECT_GT(counters, 0);
  // Counters sit on the trace's base: within seconds of it, not 1.7e15 µs away.
  EXPECT_GT(last_counter_us, 0);
  EXPECT_LT(last_counter_us, 60e6);
}

// Two ranks whose clocks are 3 ms apart: trace.json moves rank 1's events by the offset that
// the collectives give, so each step's all-reduce kernels end together on one timeline, and
// each rank has processes of its own.
TEST_F(RunCli, MergedTraceAlignsTheRanksClocks) {
  const std::string kAllReduce = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, ncclWork*)";
  const std::string src = dir_ + "/src", traces = dir_ + "/tb";
  fs::create_directories(src);
  fs::create_directories(traces);
  for (int64_t rank : {0, 1}) {
    testutil::GenTrace t;
    t.world_size = 2;
    const int64_t compute = rank == 0 ? 1'000'000 : 1'500'000, last = 1'500'000;
    for (int s = 0; s < 3; ++s) {
      testutil::GenStep st{.host_dur_ns = 3'000'000};
      st.gpu_ops.push_back({.name = "ampere_sgemm_64x64_nn",
                            .start_ns = 100'000,
                            .dur_ns = compute,
                            .launch_delay_ns = 50'000});
      st.gpu_ops.push_back(
          {.name = kAllReduce,
           .stream = 9,
           .start_ns = 100'000 + compute,
           .dur_ns = last - compute + 300'000,  // every rank's ends at the same true time
           .launch_delay_ns = 60'000,
           .collective = testutil::GenCollective{.seq = s, .nelems = 1 << 20, .group_size = 2}});
      t.steps.push_back(st);
    }
    auto g = testutil::GenerateKinetoTrace(t, {.rank = rank, .skew_ns = rank * 3'000'000});
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    std::ofstream(src + "/rank" + std::to_string(rank) + ".pt.trace.json") << g->json;
  }
  auto r =
      Run({"sh", "-c", "sleep 0.3; cp " + src + "/*.json " + traces + "/"}, {"--traces", traces});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json merged = Json::parse(testutil::ReadText(RunDir() + "/trace.json"));
  std::map<int64_t, std::vector<double>> ends;  // per pid, in order
  std::vector<std::string> names;
  for (const Json& e : merged["traceEvents"]) {
    if (e.value("name", "") == kAllReduce && e.value("cat", "") == "kernel")
      ends[e["pid"].get<int64_t>()].push_back(e["ts"].get<double>() + e["dur"].get<double>());
    if (e.value("name", "") == "process_name") names.push_back(e["args"]["name"]);
  }
  ASSERT_EQ(ends.size(), 2u) << "each rank's GPU is a process of its own";
  const std::vector<double>& a = ends.begin()->second;
  const std::vector<double>& b = ends.rbegin()->second;
  ASSERT_EQ(a.size(), 3u);
  ASSERT_EQ(b.size(), 3u);
  for (size_t s = 0; s < 3; ++s) EXPECT_NEAR(a[s], b[s], 0.01) << "step " << s;
  EXPECT_TRUE(
      std::ranges::any_of(names, [](const std::string& n) { return n.starts_with("rank 1: "); }));
  const Json rep = Report();
  bool noted = false;
  for (const Json& f : (*Section(rep, "run"))["findings"])
    noted = noted || f["text"].get<std::string>().find("clock offset") != std::string::npos;
  EXPECT_TRUE(noted);
}

#ifdef TRAINPROF_FAKE_NVML
TEST_F(RunCli, GpuMemoryOfTheCommandsProcessesThroughNvml) {
  setenv("TRAINPROF_NVML_LIBRARY", TRAINPROF_FAKE_NVML, 1);
  setenv("FAKE_NVML_DEVICES", "1", 1);
  setenv("FAKE_NVML_CHILD_GPU_MEMORY", "2000000000", 1);
  auto r = Run({"sleep", "0.5"});
  unsetenv("FAKE_NVML_DEVICES");
  unsetenv("FAKE_NVML_CHILD_GPU_MEMORY");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json rep = Report();
  EXPECT_DOUBLE_EQ(SeriesMax(rep, "process_gpu_memory_bytes"), 2e9);
  EXPECT_DOUBLE_EQ(SeriesMax(rep, "process_gpu_util_percent"), 40);
  const Json& rows = (*Table(rep, "system", "processes"))["rows"];
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_DOUBLE_EQ(rows[0]["peak_gpu_memory_bytes"].get<double>(), 2e9);
  EXPECT_DOUBLE_EQ(rows[0]["max_gpu_util_percent"].get<double>(), 40);
}
#endif

#ifdef TRAINPROF_FAKE_ROCM_SMI
// AMD GPUs through the fake ROCm SMI: the GPUs in the system report, and the VRAM of the
// command's process.
TEST_F(RunCli, AmdGpusAndTheCommandsVramThroughRocmSmi) {
  setenv("TRAINPROF_NVML_LIBRARY", "", 1);
  setenv("TRAINPROF_ROCM_SMI_LIBRARY", TRAINPROF_FAKE_ROCM_SMI, 1);
  setenv("FAKE_RSMI_DEVICES", "2", 1);
  setenv("FAKE_RSMI_CHILD_VRAM", "3000000000", 1);
  auto r = Run({"sleep", "0.5"});
  for (const char* v : {"TRAINPROF_NVML_LIBRARY", "TRAINPROF_ROCM_SMI_LIBRARY", "FAKE_RSMI_DEVICES",
                        "FAKE_RSMI_CHILD_VRAM"})
    unsetenv(v);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json rep = Report();
  const Json& gpus = (*Table(rep, "system", "gpus"))["rows"];
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[1]["name"], "AMD Instinct MI300X");
  EXPECT_DOUBLE_EQ(SeriesMax(rep, "gpu1_utilization_percent"), 70);
  EXPECT_DOUBLE_EQ(SeriesMax(rep, "process_gpu_memory_bytes"), 3e9);
  const Json& rows = (*Table(rep, "system", "processes"))["rows"];
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_DOUBLE_EQ(rows[0]["peak_gpu_memory_bytes"].get<double>(), 3e9);
}
#endif

TEST_F(RunCli, BadOptionsAreOneLineAndRunNothing) {
  auto r = Run({"true"}, {"--set", "system.interval=1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "trainprof run: --set system.interval=1: unknown key 'system.interval'; did you "
            "mean 'system.interval_s'?\n");
  EXPECT_EQ(RunDir(), "");
}

}  // namespace
