// End-to-end tests of `trainprof profile`: the real binary on the real Fashion-MNIST job.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "util/golden.h"
#include "util/process.h"

namespace trainprof {
namespace {

using nlohmann::json;
using testutil::ProcessResult;
namespace fs = std::filesystem;

// A short run: 1 epoch of 12 training and 2 validation batches.
std::vector<std::string> Profile(const std::string& out_dir, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {TRAINPROF_CLI,
                                   "profile",
                                   "--no-progress",
                                   "-o",
                                   out_dir,
                                   "--set",
                                   "training.epochs=1",
                                   "--limit-train-batches",
                                   "12",
                                   "--set",
                                   "training.limit_val_batches=2"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

json ReadJson(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);  // throws (fails the test) when the file is not valid JSON
}

std::string OnlyRunDir(const std::string& out_dir) {
  std::vector<std::string> dirs;
  for (const auto& e : fs::directory_iterator(out_dir)) dirs.push_back(e.path().string());
  EXPECT_EQ(dirs.size(), 1u);
  return dirs.empty() ? "" : dirs[0];
}

bool Empty(const std::string& dir) { return !fs::exists(dir) || fs::is_empty(dir); }

TEST(Cli, HelpListsCommandsAndExitCodes) {
  ProcessResult r = testutil::RunProcess({TRAINPROF_CLI, "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("profile"), std::string::npos);
  EXPECT_NE(r.out.find("130  stopped by Ctrl-C"), std::string::npos);
  r = testutil::RunProcess({TRAINPROF_CLI, "profile", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--config"), std::string::npos);
  r = testutil::RunProcess({TRAINPROF_CLI, "frobnicate"});
  EXPECT_EQ(r.exit_code, 2);
}

TEST(Cli, ProfilePrintsTheReportsAndWritesTheRunFolder) {
  const std::string out = testutil::FreshTempDir();
  ProcessResult r = testutil::RunProcess(Profile(out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Time report"), std::string::npos);
  EXPECT_NE(r.out.find("Speed report"), std::string::npos);
  EXPECT_NE(r.out.find("[_TrainingEpochLoop].train_dataloader_next"), std::string::npos);
  const std::string run = OnlyRunDir(out);
  for (const char* f : {"report.json", "summary.txt", "trace.json", "time_report.csv",
                        "speed_report.csv", "speed_metrics.csv", "training_rate.csv"}) {
    EXPECT_TRUE(fs::exists(run + "/" + f)) << f;
  }
  json report = ReadJson(run + "/report.json");
  EXPECT_EQ(report["schema_version"], 2);
  EXPECT_EQ(report["meta"]["steps"], 14);
  EXPECT_EQ(report["config"]["training"]["limit_train_batches"], 12);
  std::map<std::string, int64_t> calls;
  for (const json& s : report["sections"]) {
    if (s["id"] == "time") {
      for (const json& row : s["tables"][0]["rows"]) calls[row["action"]] = row["calls"];
    }
  }
  EXPECT_EQ(calls["run_training_batch"], 12);
  EXPECT_EQ(calls["[_TrainingEpochLoop].train_dataloader_next"], 12);
  EXPECT_EQ(calls["backward"], 12);
  EXPECT_EQ(calls["validation_step"], 2);
  EXPECT_EQ(calls["[Model].forward"], 14);
  json trace = ReadJson(run + "/trace.json");
  int steps = 0, validation_steps = 0;
  for (const json& e : trace["traceEvents"]) {
    const std::string name = e["name"];
    steps += name.rfind("ProfilerStep#", 0) == 0;
    validation_steps += name.rfind("ValidationStep#", 0) == 0;
  }
  EXPECT_EQ(steps, 12);
  EXPECT_EQ(validation_steps, 2);
  // analyze on trainprof's own run folder: the training steps are its steps.
  r = testutil::RunProcess({TRAINPROF_CLI, "analyze", run, "--format", "json", "--run-dir",
                            out + "/analyzed", "--db", "off"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json analyzed = json::parse(r.out);
  for (const json& s : analyzed["sections"]) {
    if (s["id"] == "overview") {
      EXPECT_EQ(s["metrics"]["steps"]["value"], 12);
    }
  }
}

// Thread names in trace.json are whole (the kernel keeps 15 characters, and a program started
// as /proc/self/exe is "exe"), and the model summary's extra forward pass is its own scope before
// the first step, not an unnamed hole at the start of ProfilerStep#0.
TEST(Cli, TraceNamesThreadsInFullAndStepZeroHasNoHole) {
  const std::string out = testutil::FreshTempDir();
  ProcessResult r = testutil::RunProcess(Profile(out, {"--db", "off"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json trace = ReadJson(OnlyRunDir(out) + "/trace.json");
  std::set<std::string> threads;
  const json* summary = nullptr;
  const json* step0 = nullptr;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") threads.insert(e["args"]["name"]);
    if (e["ph"] == "X" && e["name"] == "[trainprof].model_summary") summary = &e;
    if (e["ph"] == "X" && e["name"] == "ProfilerStep#0") step0 = &e;
  }
  EXPECT_TRUE(threads.contains("trainprof-profile")) << json(threads).dump();
  EXPECT_FALSE(threads.contains("trainprof-profi"));
  EXPECT_FALSE(threads.contains("exe"));
  ASSERT_NE(summary, nullptr);
  ASSERT_NE(step0, nullptr);
  EXPECT_LE((*summary)["ts"].get<double>() + (*summary)["dur"].get<double>(),
            (*step0)["ts"].get<double>());
}

// --repeat: the job in separate processes, one folder each, one pooled report and one history row.
TEST(Cli, RepeatPoolsTheStepsOfSeparateProcesses) {
  const std::string out = testutil::FreshTempDir();
  const std::string db = out + "/history.db";
  ProcessResult r = testutil::RunProcess(Profile(out + "/runs", {"--repeat", "2", "--db", db}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string run = OnlyRunDir(out + "/runs");
  json reps[2] = {ReadJson(run + "/repeat1/report.json"), ReadJson(run + "/repeat2/report.json")};
  EXPECT_NE(reps[0]["meta"]["pid"], reps[1]["meta"]["pid"]);
  json report = ReadJson(run + "/report.json");
  EXPECT_EQ(report["meta"]["repeats"], 2);
  std::set<int64_t> repeat_of_rows;
  size_t rate_rows = 0, repeat_rows = 0;
  for (const json& s : report["sections"]) {
    for (const json& t : s["tables"]) {
      if (t["id"] == "training_rate") {
        rate_rows = t["rows"].size();
        for (const json& row : t["rows"]) repeat_of_rows.insert(row["repeat"].get<int64_t>());
      }
      if (t["id"] == "repeats") repeat_rows = t["rows"].size();
    }
  }
  EXPECT_EQ(rate_rows, 24u);
  EXPECT_EQ(repeat_of_rows, (std::set<int64_t>{1, 2}));
  EXPECT_EQ(repeat_rows, 2u);
  ProcessResult list =
      testutil::RunProcess({TRAINPROF_CLI, "runs", "list", "--db", db, "--format", "json"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_EQ(json::parse(list.out)["sections"][0]["tables"][0]["rows"].size(), 1u);
  // Compared, the pooled run brings its own run-to-run spread.
  ProcessResult c =
      testutil::RunProcess({TRAINPROF_CLI, "compare", run, run, "--format", "json", "--db", db});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  for (const json& s : json::parse(c.out)["sections"]) {
    if (s["id"] != "noise") continue;
    EXPECT_EQ(s["tables"][0]["rows"][0]["candidate_runs"], 2);
    EXPECT_EQ(s["tables"][0]["rows"][0]["run_to_run"], "these runs (df 2)");
  }
}

TEST(Cli, RunDirIsRefusedWhenItHoldsARunUnlessOverwrite) {
  const std::string out = testutil::FreshTempDir();
  const std::vector<std::string> args = {"--run-dir", out + "/run", "--db", "off"};
  ASSERT_EQ(testutil::RunProcess(Profile(out + "/unused", args)).exit_code, 0);
  ProcessResult again = testutil::RunProcess(Profile(out + "/unused", args));
  EXPECT_EQ(again.exit_code, 3);
  EXPECT_NE(again.err.find("holds an earlier run; --overwrite"), std::string::npos) << again.err;
  std::vector<std::string> over = args;
  over.push_back("--overwrite");
  ProcessResult ok = testutil::RunProcess(Profile(out + "/unused", over));
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

// The default config's LibTorch reports on the built-in CNN: operators of steps 2-6 (memory.warmup
// 2, memory.steps 5; all training steps), the memory view of the recording, and the model summary.
TEST(Cli, ProfileHasTheOperatorReportAndTheModelSummary) {
  const std::string out = testutil::FreshTempDir();
  ProcessResult r = testutil::RunProcess(Profile(out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Operator table"), std::string::npos);
  EXPECT_NE(r.out.find("Model summary"), std::string::npos);
  const std::string run = OnlyRunDir(out);
  for (const char* f :
       {"operators.csv", "operators_top.csv", "memory_curve_r0_cpu.csv", "memory_live_at_peak.csv",
        "activation_memory.csv", "model_summary.txt", "model_summary.csv"}) {
    EXPECT_TRUE(fs::exists(run + "/" + f)) << f;
  }
  json report = ReadJson(run + "/report.json");
  std::map<std::string, int64_t> calls;
  std::map<std::string, json> layers;
  json summary_metrics, op_metrics;
  size_t timeline = 0;
  int64_t cpu_peak = 0;
  for (const json& s : report["sections"]) {
    for (const json& t : s["tables"]) {
      if (t["id"] == "operators") {
        for (const json& row : t["rows"]) calls[row["name"]] = row["calls"];
      }
      if (t["id"] == "model_summary") {
        for (const json& row : t["rows"]) layers[row["name"]] = row;
      }
      if (t["id"] == "memory_curve_r0_cpu") timeline = t["rows"].size();
      if (t["id"] == "memory_peaks") cpu_peak = t["rows"][0]["peak_allocated_bytes"];
    }
    if (s["id"] == "model_summary") summary_metrics = s["metrics"];
    if (s["id"] == "operators") op_metrics = s["metrics"];
  }
  EXPECT_EQ(calls["aten::conv2d"], 5 * 2);  // two convolutions per step
  EXPECT_EQ(calls["aten::addmm"], 5 * 3);   // three linear layers per step
  EXPECT_EQ(calls["aten::max_pool2d"], 5 * 2);
  EXPECT_GT(op_metrics["self_cpu_time_total_s"]["value"].get<double>(), 0);
  EXPECT_GT(cpu_peak, 0);
  EXPECT_GT(timeline, 0u);
  // conv1 6x1x5x5+6, conv2 16x6x5x5+16, fc1 256x120+120, fc2 120x84+84, fc3 84x10+10.
  EXPECT_EQ(summary_metrics["total_params"]["value"], 156 + 2416 + 30840 + 10164 + 850);
  EXPECT_EQ(layers["conv1"]["output_shape"], "[64, 6, 24, 24]");
  EXPECT_EQ(layers["fc1"]["input_shape"], "[64, 256]");
  EXPECT_EQ(layers["fc3"]["output_shape"], "[64, 10]");
  json trace = ReadJson(run + "/trace.json");
  int conv_events = 0;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] == "X" && e["cat"] == "cpu_op" && e["name"] == "aten::conv2d") {
      ++conv_events;
      EXPECT_TRUE(e["args"].contains("Input Dims"));
    }
  }
  EXPECT_EQ(conv_events, 5 * 2);
}

// The GPU path end to end: the fake NVML of the sampler tests stands in for the driver.
TEST(Cli, SystemReportWithAFakeGpu) {
  const std::string out = testutil::FreshTempDir();
  setenv("TRAINPROF_NVML_LIBRARY", TRAINPROF_FAKE_NVML, 1);
  setenv("FAKE_NVML_DEVICES", "1", 1);
  ProcessResult r = testutil::RunProcess(
      Profile(out, {"--set", "system.enabled=true", "--set", "system.interval_s=0.05", "-v"}));
  unsetenv("TRAINPROF_NVML_LIBRARY");
  unsetenv("FAKE_NVML_DEVICES");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // One fake GPU at 75 % utilization and 300 W, with an energy counter.
  EXPECT_NE(r.out.find("System report"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Fake GPU 80GB"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GPU 0 utilization"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("NVML energy counter"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Energy per training sample"), std::string::npos) << r.out;
  const std::string run = OnlyRunDir(out);
  const std::string csv = testutil::ReadText(run + "/system_timeseries.csv");
  EXPECT_NE(csv.find(",gpu0_utilization_percent,"), std::string::npos);
  EXPECT_NE(testutil::ReadText(run + "/system_report.csv").find("gpu0_power_w"), std::string::npos);
  json trace = ReadJson(run + "/trace.json");
  bool gpu_track = false;
  for (const json& e : trace["traceEvents"]) {
    gpu_track = gpu_track || (e["ph"] == "C" && e["name"] == "GPU 0 utilization (%)");
  }
  EXPECT_TRUE(gpu_track) << "no GPU counter track in trace.json";
}

TEST(Cli, MissingConfigFile) {
  const std::string out = testutil::FreshTempDir();
  ProcessResult r = testutil::RunProcess(Profile(out, {"--config", out + "/nope.yaml"}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "trainprof profile: error: cannot read config file " + out +
                       "/nope.yaml: no such file\n");
  EXPECT_TRUE(Empty(out)) << "no run folder for bad input";
}

TEST(Cli, YamlSyntaxErrorNamesLineAndColumn) {
  const std::string out = testutil::FreshTempDir();
  std::ofstream(out + "/c.yaml") << "training:\n  epochs: 1\n  batch_size: [64\n";
  ProcessResult r = testutil::RunProcess(Profile(out + "/runs", {"--config", out + "/c.yaml"}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(out + "/c.yaml:4:1: YAML syntax error"), std::string::npos) << r.err;
  EXPECT_TRUE(Empty(out + "/runs"));
}

TEST(Cli, UnknownKeyWithSuggestion) {
  const std::string out = testutil::FreshTempDir();
  std::ofstream(out + "/c.yaml") << "training:\n  batch: 32\n";
  ProcessResult r = testutil::RunProcess(Profile(out + "/runs", {"--config", out + "/c.yaml"}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "trainprof profile: error: " + out +
                       "/c.yaml:2:3: unknown key 'training.batch'; did you mean "
                       "'training.batch_size'?\n");
}

TEST(Cli, WrongTypeAndOutOfRange) {
  const std::string out = testutil::FreshTempDir();
  ProcessResult r = testutil::RunProcess(Profile(out, {"--set", "training.batch_size=big"}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "trainprof profile: error: --set training.batch_size=big: training.batch_size: "
            "expected an integer, got 'big'\n");
  r = testutil::RunProcess(Profile(out, {"--set", "system.interval_s=0.01"}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("system.interval_s: 0.01 is out of range (0.05 to 3600)"),
            std::string::npos);
  EXPECT_TRUE(Empty(out));
}

// training.device: cuda trains on the GPU where LibTorch sees one; elsewhere (this machine, a CPU
// LibTorch build) it is refused before the run folder exists, saying why. auto falls back to the
// CPU there. NCCL needs a GPU.
TEST(Cli, TrainingDeviceCudaRunsOnAGpuOrSaysWhyNot) {
  const std::string out = testutil::FreshTempDir();
  ProcessResult r = testutil::RunProcess(Profile(out + "/cuda", {"--set", "training.device=cuda"}));
  const bool gpu = r.exit_code == 0;
  if (!gpu) {
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("error: training.device is cuda, but LibTorch sees no CUDA device: "),
              std::string::npos)
        << r.err;
    EXPECT_TRUE(Empty(out + "/cuda"));
  } else {
    EXPECT_EQ(ReadJson(OnlyRunDir(out + "/cuda") + "/report.json")["meta"]["device"], "cuda:0");
  }
  r = testutil::RunProcess(Profile(out + "/auto", {"--set", "training.device=auto"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ReadJson(OnlyRunDir(out + "/auto") + "/report.json")["meta"]["device"],
            gpu ? "cuda:0" : "cpu");
  if (gpu) return;
  // Two ranks over NCCL with no GPU: refused in each rank before anything runs.
  r = testutil::RunProcess(
      Profile(out + "/nccl", {"--nproc-per-node", "2", "--set", "distributed.backend=nccl"}));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("distributed.backend nccl runs collectives on GPUs"), std::string::npos)
      << r.err;
}

TEST(Cli, MissingDatasetNamesThePackage) {
  const std::string out = testutil::FreshTempDir();
  ProcessResult r = testutil::RunProcess(Profile(out + "/runs", {"--set", "data.dir=" + out}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("apt-get install dataset-fashion-mnist"), std::string::npos) << r.err;
  EXPECT_TRUE(Empty(out + "/runs"));
}

TEST(Cli, CorruptIdxFileIsNamed) {
  const std::string out = testutil::FreshTempDir();
  const std::string data = out + "/data";
  fs::create_directories(data);
  const std::string real = "/usr/share/datasets/fashion-mnist";
  for (const char* f : {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                        "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"}) {
    fs::copy_file(real + "/" + f, data + "/" + f);
  }
  // Cut the training images short: a valid gzip stream of a truncated IDX file.
  gzFile g = gzopen((data + "/train-images-idx3-ubyte.gz").c_str(), "wb");
  const unsigned char header[16] = {0, 0, 8, 3, 0, 0, 0xea, 0x60, 0, 0, 0, 28, 0, 0, 0, 28};
  gzwrite(g, header, sizeof(header));
  gzwrite(g, std::string(1000, '\0').data(), 1000);
  gzclose(g);
  ProcessResult r = testutil::RunProcess(Profile(out + "/runs", {"--set", "data.dir=" + data}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "trainprof profile: error: " + data +
                       "/train-images-idx3-ubyte.gz: truncated: the header promises 47040000 "
                       "bytes of image data, the file ends after 1000\n");
}

TEST(Cli, UnwritableOutputFolder) {
  const std::string out = testutil::FreshTempDir();
  std::ofstream(out + "/file") << "x";
  ProcessResult r = testutil::RunProcess(Profile(out + "/file/runs"));
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("cannot create output folder " + out +
                       "/file/runs (output.dir): Not a "
                       "directory"),
            std::string::npos)
      << r.err;
}

// SIGTERM mid-training: the reports of the completed steps are written, trace.json is valid.
// The one MLflow run's meta.yaml status line and its training_rate metric's lines.
std::pair<std::string, int> MlflowRunStatus(const std::string& store) {
  for (const auto& e : fs::directory_iterator(store + "/1")) {
    if (!e.is_directory()) continue;
    const std::string meta = testutil::ReadText(e.path().string() + "/meta.yaml");
    const size_t at = meta.find("\nstatus: ");
    std::ifstream rate(e.path().string() + "/metrics/training_rate");
    int lines = 0;
    for (std::string l; std::getline(rate, l);) ++lines;
    return {meta.substr(at + 1, meta.find('\n', at + 1) - at - 1), lines};
  }
  return {"", 0};
}

// Stopped by a signal, the run still writes its reports; its MLflow run, RUNNING while it
// trained with training_rate growing, ends FAILED, as MLflow's client marks an interrupted run.
TEST(Cli, SigtermWritesTheReportsOfCompletedSteps) {
  const std::string out = testutil::FreshTempDir(), mlruns = out + "-mlruns";
  testutil::Child child({TRAINPROF_CLI, "profile", "-o", out, "--set", "training.progress=lines",
                         "--set", "training.epochs=50", "--set", "system.enabled=true", "--set",
                         "system.interval_s=0.05", "--set", "live.mode=lines", "--set",
                         "live.interval_s=0.1", "--set", "output.mlflow=" + mlruns});
  std::string line;
  ASSERT_TRUE(child.WaitForStderr("run folder", &line));
  // The progress line comes after the first batches; then stop it.
  ASSERT_TRUE(child.WaitForStderr("it/s", &line));
  ASSERT_TRUE(child.WaitForStderr("samples/s | RSS", &line));  // a live line with a rate
  const auto running = MlflowRunStatus(mlruns);
  EXPECT_EQ(running.first, "status: 1");
  EXPECT_GE(running.second, 1);
  child.Signal(SIGTERM);
  ProcessResult r = child.Wait();
  EXPECT_EQ(r.exit_code, 128 + SIGTERM) << r.err;
  const std::string run = OnlyRunDir(out);
  json report = ReadJson(run + "/report.json");
  EXPECT_GT(report["meta"]["steps"].get<int64_t>(), 0);
  EXPECT_NE(r.out.find("stopped by Terminated after"), std::string::npos);
  // The sampler was stopped and joined, and its figures reported.
  bool system = false;
  for (const json& sec : report["sections"]) {
    if (sec["id"] == "system") system = sec["metrics"]["samples"]["value"].get<int64_t>() > 0;
  }
  EXPECT_TRUE(system) << "no system samples after SIGTERM";
  json trace = ReadJson(run + "/trace.json");
  EXPECT_FALSE(trace["traceEvents"].empty());
  const auto failed = MlflowRunStatus(mlruns);
  EXPECT_EQ(failed.first, "status: 4");
  EXPECT_GE(failed.second, running.second);
}

const json* Section(const json& report, const std::string& id) {
  for (const json& s : report["sections"]) {
    if (s["id"] == id) return &s;
  }
  return nullptr;
}

TEST(Cli, TwoRanksWriteRankFoldersAndAMergedReportAndTrace) {
  const std::string run = testutil::FreshTempDir() + "/run";
  std::vector<std::string> args = Profile(
      "unused", {"--nproc-per-node", "2", "--run-dir", run, "--set", "memory.enabled=false"});
  ProcessResult r = testutil::RunProcess(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("starting 2 ranks"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("(2 ranks, merged)"), std::string::npos) << r.out;
  for (const char* rank : {"/rank0", "/rank1"}) {
    json rr = ReadJson(run + rank + "/report.json");
    const json* speed = Section(rr, "speed");
    ASSERT_NE(speed, nullptr);
    // The all-reduce after backward is recorded as communication.
    EXPECT_GT((*speed)["metrics"]["training_communication_s"]["value"].get<double>(), 0) << rank;
  }
  json merged = ReadJson(run + "/report.json");
  EXPECT_EQ(merged["meta"]["world_size"], 2);
  const json* ranks = Section(merged, "ranks");
  ASSERT_NE(ranks, nullptr);
  const json& rows = (*ranks)["tables"][0]["rows"];
  ASSERT_EQ(rows.size(), 2u);
  double total = 0;
  for (int i = 0; i < 2; ++i) {
    const json& row = rows[i];
    EXPECT_EQ(row["rank"], i);
    EXPECT_EQ(row["status"], "ok");
    EXPECT_EQ(row["steps"], 12);  // each rank trained the 12 batches of its shard
    EXPECT_GT(row["communication_pct"].get<double>(), 0);
    EXPECT_LE(row["min_step_s"].get<double>(), row["median_step_s"].get<double>());
    EXPECT_LE(row["median_step_s"].get<double>(), row["max_step_s"].get<double>());
    EXPECT_GT(row["peak_rss_bytes"].get<int64_t>(), 0);
    total += row["samples_per_s"].get<double>();
    // Both ranks share this machine's clock, so the measured offset is within its error bound.
    EXPECT_LE(std::abs(row["clock_offset_s"].get<double>()), row["clock_error_s"].get<double>())
        << "rank " << i;
  }
  EXPECT_DOUBLE_EQ((*ranks)["metrics"]["training_throughput_per_sample"]["value"].get<double>(),
                   total);
  const int64_t slowest = (*ranks)["metrics"]["slowest_rank"]["value"].get<int64_t>();
  EXPECT_TRUE(slowest == 0 || slowest == 1);
  // One process per rank in the merged trace, each with its steps and all-reduces.
  json trace = ReadJson(run + "/trace.json");
  std::map<int64_t, int64_t> allreduce, steps;
  std::set<std::string> processes;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") processes.insert(e["args"]["name"]);
    if (e["ph"] != "X") continue;
    if (e["name"] == "[DDP].all_reduce_gradients") ++allreduce[e["pid"].get<int64_t>()];
    if (e["name"].get<std::string>().rfind("ProfilerStep#", 0) == 0)
      ++steps[e["pid"].get<int64_t>()];
    EXPECT_GE(e["ts"].get<double>(), -1000.0);  // aligned near rank 0's start, not raw clocks
  }
  EXPECT_EQ(processes, (std::set<std::string>{"rank 0: trainprof: fashion-mnist",
                                              "rank 1: trainprof: fashion-mnist"}));
  EXPECT_EQ(allreduce[0], 12);
  EXPECT_EQ(allreduce[1], 12);
  EXPECT_EQ(steps[0], steps[1]);
}

// The live view of two ranks: rank 0 alone prints, and shows both ranks through the store;
// rank 1 writes its own live.json.
TEST(Cli, TwoRanksShowTheWorldLive) {
  const std::string run = testutil::FreshTempDir() + "/run";
  ProcessResult r = testutil::RunProcess(
      Profile("unused", {"--nproc-per-node", "2", "--run-dir", run, "--set", "memory.enabled=false",
                         "--set", "live.mode=lines", "--set", "live.interval_s=0.1", "--set",
                         "training.limit_train_batches=60"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int live = 0, world = 0;
  std::istringstream err(r.err);
  for (std::string l; std::getline(err, l);) {
    if (l.find("trainprof live: step") == std::string::npos) continue;
    ++live;
    world += l.find(" | world 2 of 2 ranks") != std::string::npos ? 1 : 0;
  }
  EXPECT_GE(live, 1) << r.err;
  EXPECT_GE(world, 1) << r.err;
  json last = ReadJson(run + "/rank0/live.json");
  EXPECT_EQ(last["world"]["world_size"], 2);
  EXPECT_FALSE(ReadJson(run + "/rank1/live.json").contains("world"));
}

TEST(Cli, AKilledRankIsNamedAndTheSurvivorStillWritesItsReports) {
  const std::string run = testutil::FreshTempDir() + "/run";
  const std::string port = std::to_string(testutil::FreeTcpPort());
  auto rank = [&](int r) {
    return std::vector<std::string>{"/usr/bin/env",
                                    "RANK=" + std::to_string(r),
                                    "WORLD_SIZE=2",
                                    "MASTER_ADDR=127.0.0.1",
                                    "MASTER_PORT=" + port,
                                    TRAINPROF_CLI,
                                    "profile",
                                    "--run-dir",
                                    run,
                                    "--set",
                                    "training.epochs=1",
                                    "--set",
                                    "memory.enabled=false",
                                    "--set",
                                    "training.progress=off",
                                    "--set",
                                    "distributed.timeout_s=5"};
  };
  testutil::Child r0(rank(0));
  testutil::Child r1(rank(1));
  std::string line;
  ASSERT_TRUE(r0.WaitForStderr("run folder", &line));
  // Mid-epoch (~470 steps of ~7 ms): long enough for rank 0 to finish steps even when the
  // machine is loaded by other tests, short enough that the epoch is not over.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  r1.Signal(SIGKILL);
  EXPECT_EQ(r1.Wait().exit_code, 128 + SIGKILL);
  ProcessResult r = r0.Wait();
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("rank 0: error: all-reduce of the gradients failed"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("rank 1: it sent no report within distributed.timeout_s = 5 s"),
            std::string::npos)
      << r.err;
  // Rank 0's own reports cover the steps it completed.
  json r0_report = ReadJson(run + "/rank0/report.json");
  EXPECT_GT(r0_report["meta"]["steps"].get<int64_t>(), 0);
  json merged = ReadJson(run + "/report.json");
  std::set<std::string> names;
  for (const json& d : merged["diagnostics"]) {
    names.insert(d["name"]);
    if (d["name"] == "rank_missing") {
      EXPECT_EQ(d["message"].get<std::string>().rfind("rank 1:", 0), 0u);
    }
  }
  EXPECT_EQ(names, (std::set<std::string>{"rank_failed", "rank_missing"}));
  const json* ranks = Section(merged, "ranks");
  ASSERT_NE(ranks, nullptr);
  EXPECT_EQ((*ranks)["tables"][0]["rows"].size(), 1u);
}

TEST(Cli, DatasetExportThenProfileEachFormat) {
  const std::string dir = testutil::FreshTempDir();
  for (const char* fmt : {"png", "packed"}) {
    ProcessResult e =
        testutil::RunProcess({TRAINPROF_CLI, "dataset", std::string("export-") + fmt, "-o",
                              dir + "/" + fmt, "--limit", "700", "--progress", "off"});
    ASSERT_EQ(e.exit_code, 0) << e.err;
    EXPECT_NE(e.out.find("wrote 1400 samples"), std::string::npos) << e.out;
  }
  EXPECT_TRUE(fs::exists(dir + "/png/train/00699.png"));
  EXPECT_TRUE(fs::exists(dir + "/png/test/labels.csv"));
  EXPECT_EQ(fs::file_size(dir + "/packed/train.packed"), 32u + 700u * 785u);
  for (const auto& [format, folder] :
       std::vector<std::pair<std::string, std::string>>{{"png_dir", "png"}, {"packed", "packed"}}) {
    const std::string out = dir + "/runs_" + format;
    ProcessResult r = testutil::RunProcess(
        Profile(out, {"--set", "data.format=" + format, "--set", "data.dir=" + dir + "/" + folder,
                      "--set", "data.num_workers=2", "--set", "memory.enabled=false"}));
    ASSERT_EQ(r.exit_code, 0) << format << ": " << r.err;
    json report = ReadJson(OnlyRunDir(out) + "/report.json");
    EXPECT_NE(report["meta"]["data"].get<std::string>().find(format), std::string::npos);
    EXPECT_EQ(report["meta"]["dataset"], "Fashion-MNIST, 700 train / 700 test samples");
    const json* speed = Section(report, "speed");
    ASSERT_NE(speed, nullptr);
    EXPECT_TRUE((*speed)["metrics"]["training_dataloader_wait_pct"]["value"].is_number());
  }
  // A png_dir that was never exported names the command that makes it.
  ProcessResult missing =
      testutil::RunProcess(Profile(dir + "/runs_missing", {"--set", "data.format=png_dir", "--set",
                                                           "data.dir=" + dir + "/nothing"}));
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("trainprof dataset export-png -o " + dir + "/nothing"),
            std::string::npos)
      << missing.err;
}

}  // namespace
}  // namespace trainprof
