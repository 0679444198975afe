// The TorchProfiler on real LibTorch operators: the operator table, trace events, allocations,
// activation memory, the model summary, and every fault the issue names.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "report/report.h"
#include "torch/cuda_allocator.h"
#include "trainprof/session.h"
#include "trainprof/torch.h"
#include "util/golden.h"

namespace trainprof {
namespace {

Options TorchOptions(const std::string& dir) {
  Options o;
  o.output.run_dir = dir;
  o.output.print = false;
  o.memory.enabled = true;
  o.memory.warmup = 1;
  o.memory.steps = 2;
  o.memory.record_shapes = true;
  o.model_summary.enabled = true;
  return o;
}

nlohmann::json Report(const std::string& dir) {
  return nlohmann::json::parse(testutil::ReadText(dir + "/report.json"));
}

const nlohmann::json* FindSection(const nlohmann::json& r, const std::string& id) {
  for (const auto& s : r["sections"]) {
    if (s["id"] == id) return &s;
  }
  return nullptr;
}

const nlohmann::json* FindTable(const nlohmann::json& section, const std::string& id) {
  for (const auto& t : section["tables"]) {
    if (t["id"] == id) return &t;
  }
  return nullptr;
}

// The row of `table` (report.json: rows are objects keyed by column) whose `key` is `value`.
const nlohmann::json* FindRow(const nlohmann::json& table, const std::string& key,
                              const std::string& value) {
  for (const auto& row : table["rows"]) {
    if (row[key] == value) return &row;
  }
  return nullptr;
}

bool HasDiagnostic(const nlohmann::json& r, const std::string& name, std::string* message) {
  for (const auto& d : r["diagnostics"]) {
    if (d["name"] == name) {
      *message = d["message"];
      return true;
    }
  }
  return false;
}

// Creates the session and attaches a TorchProfiler to it.
void Start(const Options& o, std::unique_ptr<Session>* s, std::unique_ptr<TorchProfiler>* tp) {
  auto created = Session::Create(o);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  *s = std::move(*created);
  auto attached = TorchProfiler::Attach(**s);
  ASSERT_TRUE(attached.ok()) << attached.status().ToString();
  *tp = std::move(*attached);
}

// Three steps of mm on fixed shapes: step 0 is the warm-up, steps 1-2 are recorded.
TEST(TorchProfiler, OperatorTableCountsCallsAndBytesOfRecordedStepsOnly) {
  const std::string dir = testutil::FreshTempDir() + "/run";
  std::unique_ptr<Session> s;
  std::unique_ptr<TorchProfiler> tp;
  ASSERT_NO_FATAL_FAILURE(Start(TorchOptions(dir), &s, &tp));
  torch::Tensor a = torch::ones({32, 64});
  torch::Tensor b = torch::ones({64, 16});
  std::vector<torch::Tensor> kept;
  for (int step = 0; step < 3; ++step) {
    for (int i = 0; i < 4; ++i) kept.push_back(torch::mm(a, b));  // 32 x 16 floats = 2048 B
    s->Step();
  }
  ASSERT_TRUE(s->Finish().ok());
  const nlohmann::json r = Report(dir);
  const nlohmann::json* ops = FindSection(r, "operators");
  ASSERT_NE(ops, nullptr);
  const nlohmann::json* all = FindTable(*ops, "operators");
  ASSERT_NE(all, nullptr);
  const nlohmann::json* mm = FindRow(*all, "name", "aten::mm");
  ASSERT_NE(mm, nullptr) << all->dump();
  EXPECT_EQ((*mm)["calls"], 8);
  EXPECT_EQ((*mm)["cpu_mem"], 8 * 2048);
  EXPECT_EQ((*mm)["self_cpu_mem"], 8 * 2048);
  EXPECT_EQ((*mm)["self_cpu_mem_allocated"], 8 * 2048);
  EXPECT_EQ((*mm)["self_cpu_mem_freed"], 0);
  EXPECT_GT((*mm)["cpu_total_s"].get<double>(), 0);
  EXPECT_LE((*mm)["self_cpu_s"].get<double>(), (*mm)["cpu_total_s"].get<double>());

  // Trace: the operators are cpu_op events with their input shapes, inside a recorded step.
  auto trace = nlohmann::json::parse(testutil::ReadText(dir + "/trace.json"));
  std::map<int64_t, std::pair<double, double>> steps;  // step -> [ts, ts + dur]
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "X" && e["cat"] == "user_annotation") {
      steps[e["args"]["step"]] = {e["ts"], e["ts"].get<double>() + e["dur"].get<double>()};
    }
  }
  int mm_events = 0, counters = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "C" && e["name"] == "Memory allocated (cpu) [bytes]") ++counters;
    if (e["ph"] != "X" || e["cat"] != "cpu_op" || e["name"] != "aten::mm") continue;
    ++mm_events;
    EXPECT_EQ(e["args"]["Input Dims"], nlohmann::json::parse("[[32, 64], [64, 16]]"));
    const int64_t step = e["args"]["step"];
    EXPECT_TRUE(step == 1 || step == 2);
    ASSERT_TRUE(steps.contains(step));
    EXPECT_GE(e["ts"].get<double>(), steps[step].first);
    EXPECT_LE(e["ts"].get<double>() + e["dur"].get<double>(), steps[step].second);
  }
  EXPECT_EQ(mm_events, 8);
  EXPECT_EQ(counters, 8);  // one allocation per mm
}

// An operator that throws inside an observed step: counted, the nesting stays balanced, the
// program goes on and later operators are timed at depth 0.
TEST(TorchProfiler, ExceptionInsideAnObservedOperatorLeavesTheStackBalanced) {
  const std::string dir = testutil::FreshTempDir() + "/run";
  Options o = TorchOptions(dir);
  o.memory.warmup = 0;
  o.memory.steps = 1;
  std::unique_ptr<Session> s;
  std::unique_ptr<TorchProfiler> tp;
  ASSERT_NO_FATAL_FAILURE(Start(o, &s, &tp));
  torch::Tensor a = torch::ones({4, 5});
  bool threw = false;
  try {
    torch::Tensor bad = torch::mm(a, a);  // 4x5 @ 4x5: LibTorch throws
  } catch (const c10::Error&) {
    threw = true;
  }
  EXPECT_TRUE(threw);
  torch::Tensor ok = torch::mm(a, a.t());
  s->Step();
  ASSERT_TRUE(s->Finish().ok());
  const nlohmann::json r = Report(dir);
  const nlohmann::json* all = FindTable(*FindSection(r, "operators"), "operators");
  const nlohmann::json* mm = FindRow(*all, "name", "aten::mm");
  ASSERT_NE(mm, nullptr);
  EXPECT_EQ((*mm)["calls"], 2);
  auto trace = nlohmann::json::parse(testutil::ReadText(dir + "/trace.json"));
  std::vector<std::pair<double, double>> mms;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "X" && e["name"] == "aten::mm") {
      mms.emplace_back(e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>());
    }
  }
  ASSERT_EQ(mms.size(), 2u);
  std::sort(mms.begin(), mms.end());
  EXPECT_LE(mms[0].second, mms[1].first);  // the second call is not nested in the failed one
}

TEST(TorchProfiler, SecondObserverIsRefusedWhileTheFirstIsAttached) {
  const std::string dir = testutil::FreshTempDir() + "/run";
  std::unique_ptr<Session> s;
  std::unique_ptr<TorchProfiler> first;
  ASSERT_NO_FATAL_FAILURE(Start(TorchOptions(dir), &s, &first));
  auto second = TorchProfiler::Attach(*s);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(second.status().message().find("already installed"), std::string::npos);
  first.reset();  // once the first is gone, another may attach
  auto third = TorchProfiler::Attach(*s);
  EXPECT_TRUE(third.ok()) << third.status().ToString();
  const Status finished = s->Finish();
  ASSERT_TRUE(finished.ok()) << finished.ToString();
}

TEST(TorchProfiler, ScheduleLongerThanTheRunSaysHowManyStepsAreNeeded) {
  const std::string dir = testutil::FreshTempDir() + "/run";
  Options o = TorchOptions(dir);
  o.memory.warmup = 2;
  o.memory.steps = 5;
  std::unique_ptr<Session> s;
  std::unique_ptr<TorchProfiler> tp;
  ASSERT_NO_FATAL_FAILURE(Start(o, &s, &tp));
  torch::Tensor a = torch::ones({4, 4});
  for (int i = 0; i < 3; ++i) {
    torch::Tensor c = a + a;
    s->Step();
  }
  ASSERT_TRUE(s->Finish().ok());
  std::string msg;
  ASSERT_TRUE(HasDiagnostic(Report(dir), "memory_schedule_not_reached", &msg));
  EXPECT_EQ(msg,
            "the operator observer needs memory.warmup + memory.steps = 7 steps, but the run had "
            "3: only 1 of 5 steps were recorded; run at least 7 steps or lower "
            "memory.warmup/memory.steps");
}

TEST(TorchProfiler, OtherRanksAreNotObservedWithTraceRank0Only) {
  const std::string dir = testutil::FreshTempDir() + "/run";
  Options o = TorchOptions(dir);
  o.memory.trace_rank0_only = true;
  std::unique_ptr<Session> s;
  std::unique_ptr<TorchProfiler> tp;
  setenv("RANK", "3", 1);
  Start(o, &s, &tp);
  unsetenv("RANK");
  ASSERT_FALSE(HasFatalFailure());
  torch::Tensor c = torch::ones({2, 2}) + 1;
  s->Step();
  ASSERT_TRUE(s->Finish().ok());
  const nlohmann::json r = Report(dir);
  EXPECT_EQ(FindSection(r, "operators"), nullptr);
  std::string msg;
  ASSERT_TRUE(HasDiagnostic(r, "operators_not_on_this_rank", &msg));
  EXPECT_NE(msg.find("this is rank 3"), std::string::npos);
}

// y = x W: backward saves x; at backward start the step's live blocks are x, y, the loss and
// its gradient seed.
TEST(TorchProfiler, ActivationMemoryIsWhatTheStepStillHoldsWhenBackwardBegins) {
  const std::string dir = testutil::FreshTempDir() + "/run";
  Options o = TorchOptions(dir);
  o.memory.warmup = 1;
  o.memory.steps = 2;
  std::unique_ptr<Session> s;
  std::unique_ptr<TorchProfiler> tp;
  ASSERT_NO_FATAL_FAILURE(Start(o, &s, &tp));
  torch::Tensor w = torch::ones({64, 16}, torch::requires_grad());
  for (int step = 0; step < 3; ++step) {
    torch::Tensor x = torch::ones({32, 64});  // 8192 B
    torch::Tensor y = torch::mm(x, w);        // 2048 B
    torch::Tensor loss = y.sum();             // 4 B
    loss.backward();
    w.mutable_grad().zero_();
    s->Step();
  }
  ASSERT_TRUE(s->Finish().ok());
  const nlohmann::json r = Report(dir);
  const nlohmann::json* act = FindTable(*FindSection(r, "operators"), "activation_memory");
  ASSERT_NE(act, nullptr);
  ASSERT_EQ(act->at("rows").size(), 2u);
  // x, y, the loss, and the loss's gradient seed (ones_like, made by backward() before the
  // engine runs its first node).
  for (const auto& row : act->at("rows")) {
    EXPECT_EQ(row["bytes"], 8192 + 2048 + 4 + 4) << row.dump();
  }
}

struct TwoLayerImpl : torch::nn::Module {
  TwoLayerImpl()
      : body(register_module("body",
                             torch::nn::Sequential(torch::nn::Linear(8, 4), torch::nn::ReLU(),
                                                   torch::nn::Linear(4, 2)))),
        frozen(register_module("frozen",
                               torch::nn::Linear(torch::nn::LinearOptions(2, 2).bias(false)))) {
    frozen->weight.set_requires_grad(false);
  }
  torch::Tensor forward(torch::Tensor x) { return frozen->forward(body->forward(x)); }
  torch::nn::Sequential body;
  torch::nn::Linear frozen;
};
TORCH_MODULE(TwoLayer);

// `steps` steps of TwoLayer with Adam, its roles tracked, then the session finished.
void TrainTwoLayerWithAdam(const Options& o, int steps) {
  std::unique_ptr<Session> s;
  std::unique_ptr<TorchProfiler> tp;
  ASSERT_NO_FATAL_FAILURE(Start(o, &s, &tp));
  TwoLayer model;
  torch::optim::Adam adam(model->parameters(), torch::optim::AdamOptions(1e-3));
  tp->TrackRoles(*model, adam);
  for (int step = 0; step < steps; ++step) {
    adam.zero_grad();
    model->forward(torch::ones({3, 8})).sum().backward();
    adam.step();
    s->Step();
  }
  ASSERT_TRUE(s->Finish().ok());
}

// Issue 72: memory by role from the model and its Adam, exact: 50 parameters (46 trainable, the
// frozen layer's 4 not), their 46 gradients and Adam's two moments of each trainable one.
TEST(TorchProfiler, RolesOfAModelAndItsAdamAreExact) {
  const std::string dir = testutil::FreshTempDir() + "/run";
  ASSERT_NO_FATAL_FAILURE(TrainTwoLayerWithAdam(TorchOptions(dir), 4));
  const nlohmann::json r = Report(dir);
  const nlohmann::json* roles = FindSection(r, "memory_by_role");
  ASSERT_NE(roles, nullptr);
  const nlohmann::json& m = roles->at("metrics");
  EXPECT_EQ(m["parameter_bytes"]["value"], 50 * 4);
  EXPECT_EQ(m["gradient_bytes"]["value"], 46 * 4);
  EXPECT_EQ(m["optimizer_state_bytes"]["value"], 2 * 46 * 4);
  EXPECT_FALSE(m.contains("other_bytes"));  // a CPU run: no allocator total
  const nlohmann::json* samples = FindTable(*roles, "role_samples");
  ASSERT_NE(samples, nullptr);
  ASSERT_EQ(samples->at("rows").size(), 2u);  // the recorded steps 1 and 2
  EXPECT_EQ(samples->at("rows")[0]["step"], 1);
  EXPECT_TRUE(samples->at("rows")[0]["activation_bytes"].is_null());
  const nlohmann::json* modules = FindTable(*roles, "role_modules");
  ASSERT_NE(modules, nullptr);
  const nlohmann::json* first = FindRow(*modules, "module", "body.0");
  ASSERT_NE(first, nullptr);
  EXPECT_EQ((*first)["parameter_bytes"], 36 * 4);
  EXPECT_EQ((*first)["optimizer_state_bytes"], 2 * 36 * 4);
  const nlohmann::json* frozen = FindRow(*modules, "module", "frozen");
  ASSERT_NE(frozen, nullptr);
  EXPECT_EQ((*frozen)["gradient_bytes"], 0);
  EXPECT_EQ((*frozen)["optimizer_state_bytes"], 0);
}

// The live view gets the same figures at a step's end, without memory.enabled.
TEST(TorchProfiler, TheLiveViewShowsRolesWithoutTheOperatorWindow) {
  const std::string dir = testutil::FreshTempDir() + "/run";
  Options o = TorchOptions(dir);
  o.memory.enabled = false;
  o.model_summary.enabled = false;
  o.live.mode = "file";
  ASSERT_NO_FATAL_FAILURE(TrainTwoLayerWithAdam(o, 2));
  const nlohmann::json live = nlohmann::json::parse(testutil::ReadText(dir + "/live.json"));
  EXPECT_LE(live["roles_step"], 1);  // a step's end, once a live.interval_s
  EXPECT_EQ(live["parameter_bytes"], 50 * 4);
  EXPECT_EQ(live["optimizer_state_bytes"], 2 * 46 * 4);
  EXPECT_EQ(FindSection(Report(dir), "memory_by_role"), nullptr);  // memory.enabled is off
}

TEST(TorchProfiler, ModelSummaryHasTheTreeShapesParametersAndSizes) {
  const std::string dir = testutil::FreshTempDir() + "/run";
  std::unique_ptr<Session> s;
  std::unique_ptr<TorchProfiler> tp;
  ASSERT_NO_FATAL_FAILURE(Start(TorchOptions(dir), &s, &tp));
  TwoLayer model;
  model->train();
  torch::Tensor x = torch::ones({5, 8});
  ASSERT_TRUE(tp->SummarizeModel(model, x).ok());
  EXPECT_TRUE(model->is_training());  // restored after the eval-mode pass
  s->Step();
  ASSERT_TRUE(s->Finish().ok());

  const nlohmann::json r = Report(dir);
  const nlohmann::json* sec = FindSection(r, "model_summary");
  ASSERT_NE(sec, nullptr);
  const nlohmann::json& table = *FindTable(*sec, "model_summary");
  const nlohmann::json& rows = table["rows"];
  ASSERT_EQ(rows.size(), 6u);
  auto row = [&](const std::string& name) { return *FindRow(table, "name", name); };
  EXPECT_EQ(rows[0]["layer"], "TwoLayer");
  EXPECT_EQ(rows[0]["input_shape"], "[5, 8]");
  EXPECT_EQ(rows[0]["output_shape"], "[5, 2]");
  EXPECT_EQ(row("body")["layer"], "├─Sequential: 1-1");
  EXPECT_EQ(row("body")["input_shape"], "[5, 8]");   // first child's input
  EXPECT_EQ(row("body")["output_shape"], "[5, 2]");  // last child's output
  EXPECT_EQ(row("body.0")["layer"], "│    ├─Linear: 2-1");
  EXPECT_EQ(row("body.2")["layer"], "│    └─Linear: 2-3");
  EXPECT_EQ(row("body.0")["output_shape"], "[5, 4]");
  EXPECT_EQ(row("body.0")["params"], 36);
  EXPECT_EQ(row("body.0")["mult_adds"], 5 * 36);
  EXPECT_EQ(row("body.1")["input_shape"], nullptr);  // ReLU owns no parameter
  EXPECT_EQ(row("body.2")["input_shape"], "[5, 4]");
  EXPECT_EQ(row("frozen")["layer"], "└─Linear: 1-2");
  EXPECT_EQ(row("frozen")["trainable"], "False");
  EXPECT_EQ(row("frozen")["params"], 4);

  std::map<std::string, nlohmann::json> m;
  for (const auto& [key, x] : (*sec)["metrics"].items()) m[key] = x["value"];
  EXPECT_EQ(m["total_params"], 36 + 10 + 4);
  EXPECT_EQ(m["trainable_params"], 46);
  EXPECT_EQ(m["non_trainable_params"], 4);
  EXPECT_EQ(m["input_size_bytes"], 5 * 8 * 4);
  EXPECT_EQ(m["params_size_bytes"], 50 * 4);
  // 2 x the outputs of the leaves with shapes: [5,4], [5,2], [5,2] floats.
  EXPECT_EQ(m["forward_backward_pass_size_bytes"], 2 * (20 + 10 + 10) * 4);
  EXPECT_EQ(m["total_mult_adds"], 5 * 36 + 5 * 10 + 5 * 4);
  const std::string txt = testutil::ReadText(dir + "/model_summary.txt");
  EXPECT_NE(txt.find("│    ├─Linear: 2-1"), std::string::npos) << txt;
  EXPECT_NE(txt.find("Total params"), std::string::npos);
}

// A forward that cannot run on the given input: the summary keeps the tree and says why.
TEST(TorchProfiler, ModelSummaryOnAWrongInputKeepsTheTreeAndSaysWhy) {
  const std::string dir = testutil::FreshTempDir() + "/run";
  std::unique_ptr<Session> s;
  std::unique_ptr<TorchProfiler> tp;
  ASSERT_NO_FATAL_FAILURE(Start(TorchOptions(dir), &s, &tp));
  TwoLayer model;
  Status st = tp->SummarizeModel(model, torch::ones({5, 3}));  // 3 features, not 8
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("model summary: the forward pass on the given input failed: "),
            std::string::npos);
  // Training goes on.
  torch::Tensor y = model->forward(torch::ones({2, 8}));
  EXPECT_EQ(y.size(1), 2);
  s->Step();
  ASSERT_TRUE(s->Finish().ok());
  const nlohmann::json r = Report(dir);
  std::string msg;
  EXPECT_TRUE(HasDiagnostic(r, "model_summary_without_shapes", &msg));
  const nlohmann::json* sec = FindSection(r, "model_summary");
  ASSERT_NE(sec, nullptr);
  const nlohmann::json* t = FindTable(*sec, "model_summary");
  EXPECT_EQ((*t)["rows"].size(), 6u);
  EXPECT_EQ((*t)["rows"][0]["output_shape"], nullptr);
  EXPECT_NE((*t)["notes"][0].get<std::string>().find("no shapes: the forward pass"),
            std::string::npos);
}

// With a CUDA LibTorch and a GPU: CUDA memory per step and the snapshot of the snapshot.* steps,
// read back by our own reader. Without (this machine): neither, and the report says why.
TEST(TorchProfiler, CudaMemoryAndSnapshotOnAGpuOrSaysWhatTheyNeed) {
  const std::string dir = testutil::FreshTempDir() + "/run";
  Options o = TorchOptions(dir);
  o.snapshot.enabled = true;
  o.snapshot.steps = 2;
  o.model_summary.enabled = false;
  std::unique_ptr<Session> s;
  std::unique_ptr<TorchProfiler> tp;
  ASSERT_NO_FATAL_FAILURE(Start(o, &s, &tp));
  const bool gpu = torchlib::CudaAllocatorInUse();
  if (!gpu && std::getenv("TRAINPROF_REQUIRE_GPU") != nullptr)  // scripts/gpu/check.sh
    FAIL() << "TRAINPROF_REQUIRE_GPU is set, but this build or LibTorch sees no GPU";
  for (int step = 0; step < 3; ++step) {
    if (gpu) {
      auto x = torch::ones({256, 256}, torch::TensorOptions().device(torch::kCUDA));
      (void)x.matmul(x).sum().item<float>();
    }
    s->Step();
  }
  ASSERT_TRUE(s->Finish().ok());
  const nlohmann::json r = Report(dir);
  std::string msg;
  if (!gpu) {
    ASSERT_TRUE(HasDiagnostic(r, "snapshot_needs_cuda", &msg));
    EXPECT_NE(msg.find(TRAINPROF_TORCH_CUDA ? "LibTorch sees no GPU"
                                            : "needs trainprof built against a CUDA LibTorch"),
              std::string::npos)
        << msg;
    EXPECT_EQ(FindSection(r, "cuda_memory"), nullptr) << "no figures without a GPU";
    EXPECT_FALSE(std::filesystem::exists(dir + "/memory_snapshot.pickle"));
    return;
  }
  const nlohmann::json* mem = FindSection(r, "cuda_memory");
  ASSERT_NE(mem, nullptr);
  EXPECT_GE((*mem)["metrics"]["peak_allocated_bytes"]["value"].get<double>(), 256.0 * 256 * 4);
  const nlohmann::json* steps = FindTable(*mem, "cuda_memory");
  ASSERT_NE(steps, nullptr);
  EXPECT_EQ((*steps)["rows"].size(), 3u) << "one row per step";
  ASSERT_NE(FindSection(r, "snapshot"), nullptr) << r.dump().substr(0, 2000);
  EXPECT_TRUE(std::filesystem::exists(dir + "/memory_snapshot.pickle"));
  EXPECT_FALSE(HasDiagnostic(r, "snapshot_unreadable", &msg)) << msg;
}

// On a machine without a CUDA driver (this one): memory.cuda_activity "auto" records no GPU
// work and says nothing; "on" says why it cannot, and the table has no CUDA columns.
TEST(TorchProfiler, CudaActivityOnSaysWhyItCannotRunWithoutADriver) {
  for (const std::string mode : {"auto", "on"}) {
    const std::string dir = testutil::FreshTempDir() + "/run_" + mode;
    Options o = TorchOptions(dir);
    o.memory.cuda_activity = mode;
    std::unique_ptr<Session> s;
    std::unique_ptr<TorchProfiler> tp;
    ASSERT_NO_FATAL_FAILURE(Start(o, &s, &tp));
    torch::Tensor a = torch::ones({8, 8});
    for (int step = 0; step < 3; ++step) {
      torch::mm(a, a);
      s->Step();
    }
    ASSERT_TRUE(s->Finish().ok());
    const nlohmann::json r = Report(dir);
    std::string msg;
    EXPECT_EQ(HasDiagnostic(r, "cuda_activity_unavailable", &msg), mode == "on") << mode;
    if (mode == "on") {
      const bool said = msg.find("no CUDA driver") != std::string::npos ||
                        msg.find("no CUPTI collector") != std::string::npos;
      EXPECT_TRUE(said) << msg;
    }
    const nlohmann::json* all = FindTable(*FindSection(r, "operators"), "operators");
    ASSERT_NE(all, nullptr);
    EXPECT_FALSE((*all)["rows"][0].contains("self_cuda_s")) << mode;
  }
}

}  // namespace
}  // namespace trainprof
