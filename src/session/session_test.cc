#include "trainprof/session.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "session/extension.h"
#include "util/golden.h"

namespace trainprof {
namespace {

using nlohmann::json;

Options TestOptions(const std::string& dir) {
  Options o;
  o.output.run_dir = dir;
  o.output.name = "session-test";
  o.output.print = false;
  o.speed.warmup_batches = 1;
  return o;
}

// A tiny training loop: `epochs` x (4 training steps, 2 validation steps), with a loader thread
// that records its own scopes.
void TrainingLoop(Session& s, int epochs) {
  s.SetBatchSize(8);
  for (int e = 0; e < epochs; ++e) {
    s.SetEpoch(e);
    s.SetStage(Stage::kTrain);
    TRAINPROF_SCOPE_KIND("run_training_epoch", ActionKind::kLoop);
    for (int b = 0; b < 4; ++b) {
      {
        TRAINPROF_SCOPE_KIND("[_TrainingEpochLoop].train_dataloader_next", ActionKind::kDataLoader);
        std::thread loader([] {
          SetThreadName("loader");
          TRAINPROF_SCOPE("[Data].decode");
        });
        loader.join();
      }
      {
        TRAINPROF_SCOPE_KIND("run_training_batch", ActionKind::kLoop);
        { TRAINPROF_SCOPE_KIND("[Model].forward", ActionKind::kForward); }
        { TRAINPROF_SCOPE("[Model].loss"); }
        { TRAINPROF_SCOPE_KIND("backward", ActionKind::kBackward); }
        { TRAINPROF_SCOPE_KIND("optimizer_step", ActionKind::kOptimizer); }
      }
      s.Step();
    }
    s.SetStage(Stage::kValidation);
    s.SetBatchSize(16);
    for (int b = 0; b < 2; ++b) {
      { TRAINPROF_SCOPE_KIND("[_EvaluationLoop].val_next", ActionKind::kDataLoader); }
      { TRAINPROF_SCOPE_KIND("validation_step", ActionKind::kStep); }
      s.Step();
    }
    s.SetBatchSize(8);
  }
}

// Replaces what depends on the machine or the clock by placeholders: durations, rates and
// shares; host, time and folder names. Counts, names and structure stay exact.
void Normalize(json& report) {
  for (const char* k : {"created_utc", "run_dir", "host", "pid", "wall_time_s", "clock"}) {
    if (report["meta"].contains(k)) report["meta"][k] = "<any>";
  }
  report["config"]["output"]["run_dir"] = "<string>";
  auto timing = [](const json& unit) {
    return unit == "seconds" || unit == "percent" || unit == "per_second";
  };
  for (json& s : report["sections"]) {
    for (auto& [key, m] : s["metrics"].items()) {
      if (timing(m["unit"]) && !m["value"].is_null()) m["value"] = "<number>";
    }
    for (json& t : s["tables"]) {
      // Rows sorted by total time come in an order that depends on the clock: sort by name.
      const std::string first_key = t["columns"][0]["key"];
      if (first_key == "action" || first_key == "category") {
        std::sort(t["rows"].begin(), t["rows"].end(), [&](const json& a, const json& b) {
          return a[first_key].get<std::string>() < b[first_key].get<std::string>();
        });
      }
      for (const json& c : t["columns"]) {
        if (!timing(c["unit"])) continue;
        for (const char* part : {"rows", "footer"}) {
          for (json& row : t[part]) {
            if (!row[c["key"].get<std::string>()].is_null())
              row[c["key"].get<std::string>()] = "<number>";
          }
        }
      }
    }
  }
}

json ReadJson(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

TEST(Session, WritesEveryOutputAndTheReportMatchesItsGolden) {
  const std::string dir = testutil::FreshTempDir() + "/run";
  auto session = Session::Create(TestOptions(dir));
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  Session& s = **session;
  s.SetMeta("model", "test");
  s.AddConfigValue("training.epochs", int64_t{2});
  TrainingLoop(s, 2);
  EXPECT_EQ(s.global_step(), 8);
  EXPECT_EQ(s.profiler_step(), 12);
  ASSERT_TRUE(s.Finish().ok());
  ASSERT_TRUE(s.Finish().ok()) << "a second Finish() does nothing";

  for (const char* f : {"report.json", "summary.txt", "trace.json", "time_report.csv",
                        "speed_report.csv", "training_rate.csv", "validation_rate.csv"}) {
    EXPECT_TRUE(std::filesystem::exists(dir + "/" + f)) << f;
  }
  json report = ReadJson(dir + "/report.json");
  Normalize(report);
  EXPECT_TRUE(testutil::MatchesGoldenJson("session/report.json", report.dump()));
  EXPECT_EQ(testutil::ReadText(dir + "/summary.txt"), s.summary());
}

TEST(Session, TraceHoldsStepsScopesAndThreadNames) {
  const std::string dir = testutil::FreshTempDir() + "/run";
  auto session = Session::Create(TestOptions(dir));
  ASSERT_TRUE(session.ok());
  TrainingLoop(**session, 1);
  ASSERT_TRUE((*session)->Finish().ok());
  json trace = ReadJson(dir + "/trace.json");
  int steps = 0, validation_steps = 0, decode = 0, forward = 0;
  bool loader_named = false;
  double step0_end = 0, first_forward_ts = -1;
  for (const json& e : trace["traceEvents"]) {
    const std::string name = e["name"];
    if (e["ph"] == "M" && name == "thread_name" && e["args"]["name"] == "loader")
      loader_named = true;
    if (e["ph"] != "X") continue;
    if (name.rfind("ValidationStep#", 0) == 0) ++validation_steps;
    if (name.rfind("ProfilerStep#", 0) == 0) {
      ++steps;
      if (name == "ProfilerStep#0") step0_end = e["ts"].get<double>() + e["dur"].get<double>();
    }
    if (name == "[Data].decode") ++decode;
    if (name == "[Model].forward") {
      ++forward;
      EXPECT_EQ(e["args"]["step"], forward - 1) << "one forward per training step";
      if (first_forward_ts < 0) first_forward_ts = e["ts"];
    }
  }
  EXPECT_EQ(steps, 4) << "training steps are ProfilerStep#N";
  EXPECT_EQ(validation_steps, 2) << "validation steps are not";
  EXPECT_EQ(decode, 4);
  EXPECT_EQ(forward, 4);
  EXPECT_TRUE(loader_named);
  EXPECT_LT(first_forward_ts, step0_end) << "the first forward lies inside ProfilerStep#0";
}

TEST(Session, ScheduleDecidesWhichStepsAreReported) {
  const std::string dir = testutil::FreshTempDir() + "/run";
  Options o = TestOptions(dir);
  o.schedule = Schedule{.skip_first = 1, .wait = 1, .warmup = 1, .active = 2, .repeat = 1};
  auto session = Session::Create(o);
  ASSERT_TRUE(session.ok());
  TrainingLoop(**session, 1);  // steps 0-3 train, 4-5 validation: NNWRSN -> steps 3 and 4
  ASSERT_TRUE((*session)->Finish().ok());
  json report = ReadJson(dir + "/report.json");
  std::map<std::string, int64_t> calls;
  for (const json& s : report["sections"]) {
    if (s["id"] != "time") continue;
    for (const json& row : s["tables"][0]["rows"]) calls[row["action"]] = row["calls"];
  }
  EXPECT_EQ(calls["run_training_batch"], 1);  // step 3
  EXPECT_EQ(calls["validation_step"], 1);     // step 4
  EXPECT_EQ(calls["[Data].decode"], 1) << "top level on the loader thread: in the concise set";
  EXPECT_EQ(calls.count("[Model].loss"), 0u) << "nested, kind other: not in the concise set";
  EXPECT_EQ(calls.count("run_training_epoch"), 0u) << "began in step 0, which is skipped";
  EXPECT_GT(report["meta"]["discarded_warmup_events"].get<int64_t>(), 0);
}

TEST(Session, FullBufferIsADiagnosticNotACrash) {
  const std::string dir = testutil::FreshTempDir() + "/run";
  Options o = TestOptions(dir);
  o.buffer.events_per_thread = 5;
  auto session = Session::Create(o);
  ASSERT_TRUE(session.ok());
  TrainingLoop(**session, 1);
  ASSERT_TRUE((*session)->Finish().ok());
  json report = ReadJson(dir + "/report.json");
  ASSERT_FALSE(report["diagnostics"].empty());
  EXPECT_EQ(report["diagnostics"][0]["name"], "dropped_events");
  EXPECT_GT(report["diagnostics"][0]["count"].get<int64_t>(), 0);
  EXPECT_NE((*session)->summary().find("dropped_events"), std::string::npos);
}

// The live view (live.mode: lines, a snapshot every 0.1 s): live.json appears while the loop
// runs and says how far it got; the last one, written by Finish(), has every step and says the
// run finished; stderr has the lines; output.tensorboard gets a live event file with a
// live/* event each tick, flushed as it goes.
TEST(Session, LiveViewWritesSnapshotsWhileTheRunTrains) {
  const std::string dir = testutil::FreshTempDir() + "/run";
  Options o = TestOptions(dir);
  o.live.mode = "lines";
  o.live.interval_s = 0.1;
  o.output.tensorboard = dir + "-tb";
  testing::internal::CaptureStderr();
  auto s = Session::Create(o);
  ASSERT_TRUE(s.ok()) << s.status().message();
  (*s)->SetBatchSize(4);
  json seen;
  for (int i = 0; i < 200 && seen.is_null(); ++i) {  // at most 200 steps of 10 ms
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    (*s)->Step();
    std::ifstream in(dir + "/live.json");
    if (in) seen = json::parse(in, nullptr, false);
  }
  ASSERT_TRUE(seen.is_object()) << "no live.json while the run trained";
  EXPECT_FALSE(seen["finished"].get<bool>());
  const int64_t steps = (*s)->profiler_step();
  ASSERT_TRUE((*s)->Finish().ok());
  const std::string err = testing::internal::GetCapturedStderr();
  std::ifstream in(dir + "/live.json");
  const json last = json::parse(in);
  EXPECT_TRUE(last["finished"].get<bool>());
  EXPECT_EQ(last["step"].get<int64_t>(), steps);
  EXPECT_EQ(last["batch_size"].get<int64_t>(), 4);
  EXPECT_GT(last["samples_per_s"].get<double>(), 0);
  EXPECT_GT(last["rss_bytes"].get<double>(), 0);
  EXPECT_NE(err.find("trainprof live: step"), std::string::npos) << err;
  EXPECT_NE(err.find(" (finished) |"), std::string::npos) << err;
  for (const auto& e : std::filesystem::directory_iterator(dir))  // no half-written snapshot left
    EXPECT_FALSE(e.path().filename().string().starts_with("live.json.tmp")) << e.path();
  std::string live_events;
  for (const auto& e : std::filesystem::directory_iterator(dir + "-tb")) {
    if (!e.path().string().ends_with(".trainprof-live")) continue;
    std::ifstream f(e.path(), std::ios::binary);
    live_events.assign(std::istreambuf_iterator<char>(f), {});
  }
  ASSERT_FALSE(live_events.empty()) << "no live event file in " << dir << "-tb";
  size_t ticks = 0;
  for (size_t at = 0; (at = live_events.find("live/rss_bytes", at)) != std::string::npos; ++at)
    ++ticks;
  EXPECT_GE(ticks, 2u);  // at least one tick while it trained, and the last
  EXPECT_NE(live_events.find("live/samples_per_s"), std::string::npos);
}

TEST(Session, OnlyOneActiveSession) {
  const std::string dir = testutil::FreshTempDir();
  auto a = Session::Create(TestOptions(dir + "/a"));
  ASSERT_TRUE(a.ok());
  auto b = Session::Create(TestOptions(dir + "/b"));
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE((*a)->Finish().ok());
  auto c = Session::Create(TestOptions(dir + "/c"));
  EXPECT_TRUE(c.ok()) << "a finished session frees the slot";
}

TEST(Session, InvalidOptionsAreNamed) {
  Options o = TestOptions(testutil::FreshTempDir());
  o.system.interval_s = 0.001;
  auto s = Session::Create(o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(), "system.interval_s: 0.001 is out of range (0.05 to 3600)");
  o = TestOptions(testutil::FreshTempDir());
  o.schedule.active = 0;
  EXPECT_EQ(Session::Create(o).status().message(),
            "schedule.active: 0 is out of range (1 to 1099511627776)");
}

TEST(Session, UnwritableOutputFolderIsNamed) {
  const std::string dir = testutil::FreshTempDir();
  std::ofstream(dir + "/file") << "x";
  Options o = TestOptions("");
  o.output.run_dir = "";
  o.output.dir = dir + "/file/runs";
  auto s = Session::Create(o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(
      s.status().message().find("cannot create output folder " + dir + "/file/runs (output.dir)"),
      std::string::npos)
      << s.status().message();
}

TEST(Session, RunFolderNamedAfterTimeAndName) {
  const std::string dir = testutil::FreshTempDir();
  Options o = TestOptions("");
  o.output.run_dir = "";
  o.output.dir = dir;
  auto a = Session::Create(o);
  ASSERT_TRUE(a.ok());
  const std::string first = (*a)->run_dir();
  ASSERT_TRUE((*a)->Finish().ok());
  auto b = Session::Create(o);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(first.rfind(dir + "/", 0), 0u);
  EXPECT_NE(first.find("Z-session-test"), std::string::npos);
  EXPECT_NE((*b)->run_dir(), first) << "two runs in one second get two folders";
}

TEST(Session, CreateFromConfigFile) {
  const std::string dir = testutil::FreshTempDir();
  std::ofstream(dir + "/p.yaml") << "time:\n  verbose: true\noutput:\n  run_dir: " << dir
                                 << "/run\n  print: false\n";
  auto s = Session::CreateFromConfigFile(dir + "/p.yaml");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_TRUE((*s)->options().time.verbose);
  EXPECT_EQ((*s)->run_dir(), dir + "/run");
  std::ofstream(dir + "/bad.yaml") << "time:\n  verbos: true\n";
  ASSERT_TRUE((*s)->Finish().ok());
  auto bad = Session::CreateFromConfigFile(dir + "/bad.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            dir + "/bad.yaml:2:3: unknown key 'time.verbos'; did you mean 'time.verbose'?");
}

// memory.* needs the LibTorch adapter; a program that did not attach it hears why nothing came.
TEST(Session, EnabledReportWithoutItsCollectorSaysSo) {
  const std::string dir = testutil::FreshTempDir() + "/run";
  Options o = TestOptions(dir);
  o.memory.enabled = true;
  auto s = Session::Create(o);
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE((*s)->Finish().ok());
  EXPECT_NE((*s)->summary().find("memory.enabled is true, but no collector for the operator and "
                                 "memory report is attached to this session"),
            std::string::npos);
}

// An extension hears every step and adds its section and trace events at Finish().
class CountingExtension : public session::Extension {
 public:
  std::vector<int64_t> steps;
  void OnStep(int64_t step) override { steps.push_back(step); }
  Status OnFinish(session::FinishContext& ctx) override {
    report::Section& sec = ctx.report.AddSection("counting", "Counting");
    sec.AddMetric("steps_seen", "Steps seen", static_cast<int64_t>(ctx.steps.size()),
                  report::Unit::kCount);
    session::ExtraEvents x;
    x.cat = "test_op";
    x.names = {"op"};
    x.args = {"\"k\":1"};
    x.events.push_back({0, 0, 7, 10, 5, 1});
    ctx.trace->extra.push_back(x);
    return Status::Ok();
  }
  bool Claims(std::string_view key) const override { return key == "memory.enabled"; }
};

TEST(Session, ExtensionsHearStepsAndAddToTheReportAndTrace) {
  const std::string dir = testutil::FreshTempDir() + "/run";
  Options o = TestOptions(dir);
  o.memory.enabled = true;
  auto s = Session::Create(o);
  ASSERT_TRUE(s.ok());
  (*s)->Step();
  auto ext = std::make_shared<CountingExtension>();
  ASSERT_TRUE(session::AttachExtension(**s, ext).ok());
  (*s)->Step();
  (*s)->Step();
  ASSERT_TRUE((*s)->Finish().ok());
  EXPECT_EQ(ext->steps, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_NE((*s)->summary().find("Steps seen  3"), std::string::npos) << (*s)->summary();
  EXPECT_EQ((*s)->summary().find("no collector"), std::string::npos);
  auto trace = nlohmann::json::parse(testutil::ReadText(dir + "/trace.json"));
  int found = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "X" && e["cat"] == "test_op") {
      EXPECT_EQ(e["name"], "op");
      EXPECT_EQ(e["tid"], 7);
      EXPECT_EQ(e["args"]["k"], 1);
      EXPECT_EQ(e["args"]["step"], 1);
      ++found;
    }
  }
  EXPECT_EQ(found, 1);
  EXPECT_EQ(session::AttachExtension(**s, ext).code(), StatusCode::kFailedPrecondition);
}

// The sampler thread runs for the whole session; its figures reach every output.
TEST(Session, SystemReportSampledDuringTheRun) {
  const std::string dir = testutil::FreshTempDir() + "/run";
  Options o = TestOptions(dir);
  o.system.enabled = true;
  o.system.interval_s = 0.05;
  setenv("TRAINPROF_NVML_LIBRARY", "", 1);  // the same figures whether or not a GPU is here
  auto session = Session::Create(o);
  unsetenv("TRAINPROF_NVML_LIBRARY");
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  Session& s = **session;
  TrainingLoop(s, 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ASSERT_TRUE(s.Finish().ok());

  json r = ReadJson(dir + "/report.json");
  const json* sys = nullptr;
  for (const json& sec : r["sections"]) {
    if (sec["id"] == "system") sys = &sec;
  }
  ASSERT_NE(sys, nullptr) << "no system section";
  EXPECT_GE((*sys)["metrics"]["samples"]["value"].get<int64_t>(), 3);
  bool cpu = false;
  for (const json& t : (*sys)["tables"]) {
    if (t["id"] != "system_report") continue;
    for (const json& row : t["rows"]) {
      if (row["key"] == "cpu_utilization_percent") {
        cpu = true;
        EXPECT_GE(row["max"].get<double>(), 0.0);
        EXPECT_LE(row["max"].get<double>(), 100.0);
        EXPECT_EQ(row["unit"], "percent");
      }
    }
  }
  EXPECT_TRUE(cpu) << "no CPU utilization row";
  EXPECT_NE(s.summary().find("System report"), std::string::npos);
  EXPECT_NE(s.summary().find("GPU: NVML is switched off"), std::string::npos) << s.summary();

  const std::string csv = testutil::ReadText(dir + "/system_timeseries.csv");
  EXPECT_EQ(csv.rfind("time_s,cpu_utilization_percent,", 0), 0u) << csv.substr(0, 200);

  json trace = ReadJson(dir + "/trace.json");
  int counters = 0;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] == "C" && e["name"] == "Process resident memory (RSS) (MiB)") ++counters;
  }
  EXPECT_GE(counters, 3) << "RSS counter track in trace.json";
}

// Steps, setters and scopes from several threads at once (run under TSan in CI).
TEST(Session, ConcurrentUseFromSeveralThreads) {
  const std::string dir = testutil::FreshTempDir() + "/run";
  auto session = Session::Create(TestOptions(dir));
  ASSERT_TRUE(session.ok());
  Session& s = **session;
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&s, i] {
      for (int j = 0; j < 200; ++j) {
        TRAINPROF_SCOPE("worker");
        if (i == 0) s.Step();
        if (i == 1) s.SetBatchSize(j + 1);
        if (i == 2) s.SetMeta("k", "v");
        (void)s.global_step();
      }
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_TRUE(s.Finish().ok());
  json report = ReadJson(dir + "/report.json");
  EXPECT_EQ(report["meta"]["steps"], 200);
  int64_t worker_calls = 0;
  for (const json& row : report["sections"][0]["tables"][0]["rows"]) {
    if (row["action"] == "worker") worker_calls = row["calls"];
  }
  EXPECT_EQ(worker_calls, 800);
}

}  // namespace
}  // namespace trainprof

namespace trainprof {
namespace {

const nlohmann::json* GpuTimeRow(const nlohmann::json& report, const std::string& action) {
  for (const auto& s : report["sections"]) {
    if (s["id"] != "gpu_time") continue;
    for (const auto& row : s["tables"][0]["rows"]) {
      if (row["action"] == action) return &row;
    }
  }
  return nullptr;
}

// time.cuda_events through a stand-in CUDA runtime whose GPU clock advances 1 ms per recorded
// event: a scope around one nested scope spans 3 marks (3 ms), the nested one 1 ms. Only the
// recorded steps' scopes have GPU time.
TEST(Session, CudaEventsGiveGpuTimePerAction) {
  ASSERT_EQ(setenv("TRAINPROF_CUDART", TRAINPROF_FAKE_CUDART, 1), 0);
  const std::string dir = testutil::FreshTempDir() + "/run";
  Options o = TestOptions(dir);
  o.time.cuda_events = true;
  o.schedule.skip_first = 1;
  {
    auto s = Session::Create(o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    for (int step = 0; step < 3; ++step) {
      TRAINPROF_SCOPE("[Model].forward_with_loss");
      { TRAINPROF_SCOPE("[Model].forward"); }
      (*s)->Step();
    }
    ASSERT_TRUE((*s)->Finish().ok());
  }
  unsetenv("TRAINPROF_CUDART");
  const json r = ReadJson(dir + "/report.json");
  const json* outer = GpuTimeRow(r, "[Model].forward_with_loss");
  const json* inner = GpuTimeRow(r, "[Model].forward");
  ASSERT_NE(outer, nullptr) << r.dump();
  ASSERT_NE(inner, nullptr);
  EXPECT_EQ((*outer)["calls"], 2);  // step 0 skipped by the schedule
  EXPECT_DOUBLE_EQ((*outer)["gpu_mean_s"].get<double>(), 0.003);
  EXPECT_DOUBLE_EQ((*outer)["gpu_total_s"].get<double>(), 0.006);
  EXPECT_EQ((*inner)["calls"], 2);
  EXPECT_DOUBLE_EQ((*inner)["gpu_mean_s"].get<double>(), 0.001);
}

TEST(Session, CudaEventsWithoutARuntimeSayWhy) {
  ASSERT_EQ(setenv("TRAINPROF_CUDART", "/nonexistent/libcudart.so", 1), 0);
  const std::string dir = testutil::FreshTempDir() + "/run";
  Options o = TestOptions(dir);
  o.time.cuda_events = true;
  {
    auto s = Session::Create(o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    { TRAINPROF_SCOPE("[Model].forward"); }
    (*s)->Step();
    ASSERT_TRUE((*s)->Finish().ok());
  }
  unsetenv("TRAINPROF_CUDART");
  const json r = ReadJson(dir + "/report.json");
  EXPECT_EQ(GpuTimeRow(r, "[Model].forward"), nullptr);
  bool said = false;
  for (const auto& d : r["diagnostics"]) {
    if (d["name"] == "cuda_events_unavailable") {
      said = d["message"].get<std::string>().find("no CUDA runtime") != std::string::npos;
    }
  }
  EXPECT_TRUE(said) << r["diagnostics"].dump();
}

}  // namespace
}  // namespace trainprof
