// The Operator, Kernel and Phase views on hand-made TraceModels with answers worked out by hand
// from the TensorBoard plugin's definitions (docs/trace-analysis.md), and their invariants on
// the real traces of ../shared/data/traces/.
#include "analysis/operator_view.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "analysis/hta/hta_counters.h"
#include "analysis/kernel_sequences.h"
#include "analysis/module_view.h"
#include "analysis/op_tree.h"
#include "analysis/phase_view.h"
#include "trace/trace_files.h"
#include "util/golden.h"

namespace trainprof::analysis {
namespace {

using trace::EventKind;

constexpr uint32_t kHost = 0, kGpu = 1;

struct ModelBuilder {
  trace::TraceModel m;
  ModelBuilder() {
    m.tracks = {{.pid = 1, .tid = 1}, {.pid = 0, .tid = 7, .device = 0, .stream = 7}};
  }
  size_t Add(EventKind k, const std::string& name, int64_t ts, int64_t dur, uint32_t track,
             int64_t corr = trace::kNone) {
    size_t i = m.Add(k, name, ts, dur, track);
    m.correlation.Set(i, corr);
    return i;
  }
  // A runtime call on the host and the GPU event it launched.
  size_t Launch(const std::string& kernel, int64_t ts, int64_t gpu_ts, int64_t gpu_dur,
                EventKind gpu_kind = EventKind::kKernel) {
    const int64_t corr = ++next_corr;
    Add(EventKind::kRuntime,
        gpu_kind == EventKind::kKernel ? "cudaLaunchKernel" : "cudaMemcpyAsync", ts, 10, kHost,
        corr);
    return Add(gpu_kind, kernel, gpu_ts, gpu_dur, kGpu, corr);
  }
  trace::TraceModel Done() {
    m.LinkLaunches();
    return std::move(m);
  }
  int64_t next_corr = 0;
};

// ProfilerStep#1 [0, 1000) around: aten::linear [100, 600) > aten::addmm [150, 500) with two
// kernels (one on Tensor Cores), a memcpy launched by linear itself, aten::relu without GPU work,
// and Optimizer.step (left out of the view) around aten::add_; one kernel launched outside
// every range.
trace::TraceModel Training() {
  ModelBuilder b;
  b.Add(EventKind::kUserAnnotation, "ProfilerStep#1", 0, 1000, kHost);
  b.Add(EventKind::kCpuOp, "aten::linear", 100, 500, kHost);
  b.Add(EventKind::kCpuOp, "aten::addmm", 150, 350, kHost);
  b.Launch("ampere_fp16_s16816gemm_fp16_128x128", 200, 300, 100);
  b.Launch("elementwise_kernel", 260, 400, 50);
  b.Launch("Memcpy HtoD (Pageable -> Device)", 520, 600, 30, EventKind::kMemcpy);
  b.Add(EventKind::kCpuOp, "aten::relu", 650, 50, kHost);
  b.Add(EventKind::kCpuOp, "Optimizer.step#SGD.step", 700, 200, kHost);
  b.Add(EventKind::kCpuOp, "aten::add_", 710, 90, kHost);
  b.Launch("vectorized_add_kernel", 720, 800, 20);
  b.Launch("orphan_kernel", 1100, 1120, 10);
  return b.Done();
}

const OperatorRow& Row(const std::vector<OperatorRow>& rows, const std::string& name) {
  auto it =
      std::find_if(rows.begin(), rows.end(), [&](const OperatorRow& r) { return r.name == name; });
  EXPECT_NE(it, rows.end()) << name;
  static const OperatorRow kNone;
  return it == rows.end() ? kNone : *it;
}

TEST(OperatorView, SelfAndTotalAsThePluginDefinesThem) {
  const trace::TraceModel m = Training();
  const std::vector<OperatorRow> ops = OperatorView(m, BuildOpTree(m));
  ASSERT_EQ(ops.size(), 4u);  // linear, addmm, add_, relu; not Optimizer.step, not the step
  const OperatorRow& addmm = Row(ops, "aten::addmm");
  EXPECT_EQ(addmm.calls, 1);
  EXPECT_EQ(addmm.host_total_ns, 350);
  EXPECT_EQ(addmm.host_self_ns, 350 - 10 - 10);  // less its two runtime calls
  EXPECT_EQ(addmm.device_self_ns, 150);
  EXPECT_EQ(addmm.device_total_ns, 150);
  EXPECT_EQ(addmm.tc_self_ns, 100);
  EXPECT_TRUE(addmm.tc_eligible);
  const OperatorRow& linear = Row(ops, "aten::linear");
  EXPECT_EQ(linear.host_self_ns, 500 - 350 - 10);
  EXPECT_EQ(linear.device_self_ns, 30);    // its own memcpy
  EXPECT_EQ(linear.device_total_ns, 180);  // and addmm's kernels
  EXPECT_EQ(linear.tc_self_ns, 0);
  EXPECT_EQ(linear.tc_total_ns, 100);
  EXPECT_DOUBLE_EQ(linear.tc_total_pct(), 100.0 * 100 / 180);
  const OperatorRow& relu = Row(ops, "aten::relu");
  EXPECT_EQ(relu.device_total_ns, 0);
  EXPECT_FALSE(relu.tc_eligible);
  const OperatorRow& add = Row(ops, "aten::add_");
  EXPECT_EQ(add.host_self_ns, 80);
  EXPECT_EQ(add.device_self_ns, 20);
  EXPECT_EQ(ops.front().name, "aten::linear");  // by device total
}

// The tree does not depend on the order events come in: Kineto writes a thread's host events in
// a few ordered runs, and the op tree merges them (op_tree.cc's SortRuns).
TEST(OperatorView, SameAnswerInAnyEventOrder) {
  const trace::TraceModel m = Training();
  auto rows = [](const trace::TraceModel& x) {
    std::vector<std::tuple<std::string, int64_t, int64_t, int64_t, int64_t, int64_t>> out;
    for (const OperatorRow& r : OperatorView(x, BuildOpTree(x)))
      out.emplace_back(r.name, r.calls, r.host_self_ns, r.host_total_ns, r.device_self_ns,
                       r.device_total_ns);
    return out;
  };
  std::vector<size_t> order(m.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  for (int variant = 0; variant < 3; ++variant) {
    if (variant == 1) std::reverse(order.begin(), order.end());
    if (variant == 2)  // two interleaved runs: evens, then odds
      std::stable_partition(order.begin(), order.end(), [](size_t i) { return i % 2 == 0; });
    ModelBuilder b;
    for (size_t i : order)
      b.Add(m.kind[i], m.name_of(i), m.ts_ns[i], m.dur_ns[i], m.track[i], m.correlation[i]);
    EXPECT_EQ(rows(b.Done()), rows(m)) << "variant " << variant;
  }
}

TEST(OperatorView, EligibilityComesUpFromChildOperators) {
  ModelBuilder b;
  b.Add(EventKind::kCpuOp, "aten::my_matmul_wrapper", 0, 100, kHost);
  b.Add(EventKind::kCpuOp, "aten::mm", 10, 50, kHost);
  b.Add(EventKind::kCpuOp, "aten::custom", 200, 100, kHost);
  b.Launch("volta_h884gemm_64x64", 210, 250, 40);  // a Tensor Core kernel of its own
  const trace::TraceModel m = b.Done();
  const std::vector<OperatorRow> ops = OperatorView(m, BuildOpTree(m));
  EXPECT_TRUE(Row(ops, "aten::my_matmul_wrapper").tc_eligible);
  EXPECT_TRUE(Row(ops, "aten::custom").tc_eligible);
  EXPECT_FALSE(IsTensorCoreEligibleOp("aten::custom"));
}

// A ProfilerStep#N range written as a cpu_op (older traces) is a step around the operators: an
// eligible child does not make it "TC eligible".
// A ProfilerStep#N range (a cpu_op in torch's legacy profiler) is a step: not an operator row,
// and no operator above it becomes Tensor Core eligible through it.
TEST(OperatorView, AStepIsNotAnOperator) {
  ModelBuilder b;
  b.Add(EventKind::kCpuOp, "ProfilerStep#3", 0, 500, kHost);
  b.Add(EventKind::kCpuOp, "aten::mm", 10, 50, kHost);
  const trace::TraceModel m = b.Done();
  const std::vector<OperatorRow> ops = OperatorView(m, BuildOpTree(m));
  EXPECT_TRUE(Row(ops, "aten::mm").tc_eligible);
  EXPECT_TRUE(
      std::ranges::none_of(ops, [](const OperatorRow& o) { return o.name == "ProfilerStep#3"; }));
}

// aten::copy_ calling aten::copy_ (a dtype change inside a device copy): both calls count, but
// the inner one's time is inside the outer's total, so the total is the outer call's time, not
// more than the trace lasted. Self times are each call's own.
TEST(OperatorView, ACallInsideOneOfItsOwnNameIsCountedOnceInTheTotal) {
  ModelBuilder b;
  b.Add(EventKind::kCpuOp, "aten::copy_", 0, 100, kHost);
  b.Add(EventKind::kCpuOp, "aten::copy_", 10, 60, kHost);
  b.Launch("memcpy_kernel", 20, 100, 30);
  b.Add(EventKind::kCpuOp, "aten::copy_", 200, 50, kHost);  // a later call of its own
  const trace::TraceModel m = b.Done();
  const std::vector<OperatorRow> ops = OperatorView(m, BuildOpTree(m));
  const OperatorRow& copy = Row(ops, "aten::copy_");
  EXPECT_EQ(copy.calls, 2);  // the inner copy_ is the outer's only operator: one call (below)
  EXPECT_EQ(copy.host_total_ns, 100 + 50);  // not 100 + 60 + 50
  EXPECT_EQ(copy.host_self_ns, (100 - 60) + (60 - 10) + 50);
  EXPECT_EQ(copy.device_total_ns, 30);  // the kernel once
}

// Issue 69: the plugin's Operator view counts 198 aten::div calls on its ResNet-50 sample where
// the trace has 204: its op tree merges an operator that is the only operator inside a parent of
// the same name (MeanBackward1 > aten::div > aten::div) into one call. Its self times stay in the
// row; a parent with two same-name children keeps three calls.
TEST(OperatorView, ASameNameOnlyChildIsOneCallWithItsParent) {
  ModelBuilder b;
  b.Add(EventKind::kCpuOp, "MeanBackward1", 0, 100, kHost);
  b.Add(EventKind::kCpuOp, "aten::div", 10, 80, kHost);
  b.Add(EventKind::kCpuOp, "aten::div", 20, 50, kHost);
  b.Launch("div_kernel", 30, 100, 24);
  b.Add(EventKind::kCpuOp, "aten::mul", 200, 100, kHost);  // two children: no merge
  b.Add(EventKind::kCpuOp, "aten::mul", 210, 20, kHost);
  b.Add(EventKind::kCpuOp, "aten::mul", 240, 20, kHost);
  const trace::TraceModel m = b.Done();
  const std::vector<OperatorRow> ops = OperatorView(m, BuildOpTree(m));
  const OperatorRow& div = Row(ops, "aten::div");
  EXPECT_EQ(div.calls, 1);
  EXPECT_EQ(div.host_self_ns, 80 - 10);  // the launch call's 10 ns are not the operator's
  EXPECT_EQ(div.host_total_ns, 80);
  EXPECT_EQ(div.device_self_ns, 24);
  EXPECT_EQ(Row(ops, "aten::mul").calls, 3);
}

// The same merge by shape: the child's own shape gets no row of its own, empty or not.
TEST(OperatorView, AMergedCallLeavesNoEmptyShapeRow) {
  trace::TraceModel m;
  m.tracks = {{.pid = 1, .tid = 1}};
  const size_t outer = m.Add(EventKind::kCpuOp, "aten::div", 10, 70, kHost);
  const size_t inner = m.Add(EventKind::kCpuOp, "aten::div", 20, 30, kHost);
  m.AddInputs(static_cast<uint32_t>(outer), {m.names.Intern("[[4], []]")});
  m.AddInputs(static_cast<uint32_t>(inner), {m.names.Intern("[[4], [1]]")});
  const std::vector<OperatorRow> rows = OperatorViewByShape(m, BuildOpTree(m));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].input_dims, "[[4], []]");
  EXPECT_EQ(rows[0].calls, 1);
}

// Without a Tensor Core kernel the tree keeps no Tensor Core times at all, and reads them as 0;
// with one, every node has both.
TEST(OperatorView, TensorCoreTimesOnlyWhenAKernelUsesThem) {
  auto model = [](bool amp) {
    ModelBuilder b;
    b.Add(EventKind::kCpuOp, "aten::linear", 0, 100, kHost);
    b.Add(EventKind::kCpuOp, "aten::mm", 10, 50, kHost);
    b.Launch("sgemm_128x64_nn", 20, 60, 40);
    if (amp) b.Launch("volta_h884gemm_64x64", 30, 70, 5);
    return b.Done();
  };
  const OpTree fp32 = BuildOpTree(model(false));
  ASSERT_EQ(fp32.nodes.size(), 2u);
  EXPECT_TRUE(fp32.tc_self_ns.empty());
  EXPECT_TRUE(fp32.tc_total_ns.empty());
  EXPECT_EQ(fp32.tc_total(0), 0);
  EXPECT_EQ(fp32.device_total_ns[0], 40);
  EXPECT_TRUE(fp32.nodes[1].tc_eligible);  // aten::mm is eligible by name all the same
  const OpTree amp = BuildOpTree(model(true));
  ASSERT_EQ(amp.tc_self_ns.size(), 2u);
  EXPECT_EQ(amp.tc_self(0), 0);
  EXPECT_EQ(amp.tc_self(1), 5);
  EXPECT_EQ(amp.tc_total(0), 5);
}

TEST(KernelView, PerKernelAndPerOperator) {
  const trace::TraceModel m = Training();
  const OpTree t = BuildOpTree(m);
  const std::vector<KernelRow> k = KernelView(m, t, false);
  ASSERT_EQ(k.size(), 4u);  // memcpy is not a kernel
  EXPECT_EQ(k[0].name, "ampere_fp16_s16816gemm_fp16_128x128");
  EXPECT_TRUE(k[0].tensor_cores);
  EXPECT_EQ(k[0].total_ns, 100);
  EXPECT_TRUE(std::isnan(k[0].blocks_per_sm));  // the trace has no such arg
  EXPECT_FALSE(k[1].tensor_cores);
  const std::vector<KernelRow> ok = KernelView(m, t, true);
  auto find = [&](const std::string& name) {
    return *std::find_if(ok.begin(), ok.end(), [&](const KernelRow& r) { return r.name == name; });
  };
  EXPECT_EQ(find("ampere_fp16_s16816gemm_fp16_128x128").op, "aten::addmm");
  EXPECT_EQ(find("vectorized_add_kernel").op, "aten::add_");
  EXPECT_EQ(find("orphan_kernel").op, "");
}

TEST(KernelView, OccupancyWeightedByDurationMissingCountsAsZero) {
  ModelBuilder b;
  size_t a = b.Launch("k", 0, 100, 100);
  size_t c = b.Launch("k", 20, 300, 300);
  trace::TraceModel m = b.Done();
  m.kernel_stats.push_back(
      {.event = static_cast<uint32_t>(a), .blocks_per_sm = 2, .occupancy_pct = 50});
  m.kernel_stats.push_back({.event = static_cast<uint32_t>(c), .occupancy_pct = 25});
  const std::vector<KernelRow> k = KernelView(m, BuildOpTree(m), false);
  ASSERT_EQ(k.size(), 1u);
  EXPECT_EQ(k[0].calls, 2);
  EXPECT_EQ(k[0].min_ns, 100);
  EXPECT_EQ(k[0].max_ns, 300);
  EXPECT_DOUBLE_EQ(k[0].mean_ns(), 200);
  EXPECT_DOUBLE_EQ(k[0].blocks_per_sm, (2.0 * 100 + 0 * 300) / 400);
  EXPECT_DOUBLE_EQ(k[0].occupancy_pct, (50.0 * 100 + 25 * 300) / 400);
}

TEST(PhaseView, AnnotationsPhasesAndDataLoaderMarkers) {
  ModelBuilder b;
  b.Add(EventKind::kUserAnnotation, "ProfilerStep#3", 0, 1000, kHost);
  b.Add(EventKind::kUserAnnotation, "load_batch", 0, 100, kHost);
  b.Add(EventKind::kUserAnnotation, "## forward ##", 100, 300, kHost);
  b.Add(EventKind::kCpuOp, "aten::mm", 150, 100, kHost);
  b.Launch("sgemm", 160, 300, 40);
  b.Add(EventKind::kUserAnnotation, "model.backward", 400, 400, kHost);
  b.Add(EventKind::kGpuUserAnnotation, "## forward ##", 290, 60, kGpu);
  const trace::TraceModel m = b.Done();
  const OpTree t = BuildOpTree(m);

  PhaseResult p = ComputePhases(m, t, {});
  EXPECT_EQ(p.dataloader_markers, 0);
  ASSERT_EQ(p.rows.size(), 3u);  // not the ProfilerStep
  EXPECT_EQ(p.rows[0].name, "model.backward");
  EXPECT_EQ(p.rows[0].phase, "backward");
  EXPECT_EQ(p.rows[1].name, "## forward ##");
  EXPECT_EQ(p.rows[1].phase, "forward");
  EXPECT_EQ(p.rows[1].cpu_ns, 300);
  EXPECT_EQ(p.rows[1].gpu_calls, 1);
  EXPECT_EQ(p.rows[1].gpu_ns, 60);
  EXPECT_EQ(p.rows[1].device_ns, 40);
  EXPECT_EQ(p.rows[2].phase, "user");

  p = ComputePhases(m, t, {"load_"});
  EXPECT_EQ(p.dataloader_markers, 1);
  EXPECT_EQ(p.rows[2].phase, "dataloader");
  EXPECT_TRUE(IsDataLoaderName("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", {}));
  EXPECT_EQ(PhaseOf("Optimizer.step#Adam.step", {}), "optimizer");
}

TEST(ModuleView, HierarchyWithHostAndDeviceTime) {
  ModelBuilder b;
  b.Add(EventKind::kPythonFunction, "nn.Module: Net_0", 0, 1000, kHost);
  b.Add(EventKind::kPythonFunction, "nn.Module: Linear_0", 100, 300, kHost);
  b.Add(EventKind::kCpuOp, "aten::linear", 150, 150, kHost);
  b.Launch("gemm", 160, 400, 50);
  b.Add(EventKind::kPythonFunction, "nn.Module: Linear_1", 500, 300, kHost);
  b.Launch("gemm", 510, 600, 30);
  b.Add(EventKind::kPythonFunction, "nn.Module: Net_0", 2000, 500, kHost);
  b.Add(EventKind::kPythonFunction, "nn.Module: Linear_0", 2100, 100, kHost);
  b.Add(EventKind::kPythonFunction, "torch/nn/functional.py(1): relu", 2300, 10, kHost);
  const trace::TraceModel m = b.Done();
  const std::vector<ModuleRow> rows = ModuleView(m, BuildOpTree(m));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].path, "Net_0");
  EXPECT_EQ(rows[0].calls, 2);
  EXPECT_EQ(rows[0].host_ns, 1500);
  EXPECT_EQ(rows[0].device_ns, 80);
  EXPECT_EQ(rows[0].self_device_ns, 0);
  EXPECT_EQ(rows[1].path, "Net_0 > Linear_0");  // 400 ns of host time, before Linear_1's 300
  EXPECT_EQ(rows[1].depth, 1);
  EXPECT_EQ(rows[1].calls, 2);
  EXPECT_EQ(rows[1].device_ns, 50);
  EXPECT_EQ(rows[2].name, "Linear_1");
  EXPECT_EQ(rows[2].self_device_ns, 30);
}

TEST(FrequentKernelSequences, OneOperatorsRepeatedSequence) {
  ModelBuilder b;
  for (int64_t c = 0; c < 3; ++c) {  // aten::linear three times: gemm, then bias and relu
    const int64_t at = c * 1000;
    b.Add(EventKind::kCpuOp, "aten::linear", at, 500, kHost);
    b.Add(EventKind::kCpuOp, "aten::mm", at + 10, 100, kHost);
    b.Launch("gemm", at + 20, at + 600, 100);
    b.Launch("bias", at + 200, at + 700, 20);
    b.Launch("relu", at + 300, at + 720, 10 + c);
  }
  b.Add(EventKind::kCpuOp, "aten::linear", 5000, 500, kHost);  // two kernels: too short
  b.Launch("gemm", 5010, 5600, 100);
  b.Launch("bias", 5020, 5700, 20);
  b.Add(EventKind::kCpuOp, "aten::conv2d", 7000, 500, kHost);  // once: not frequent
  for (int k = 0; k < 4; ++k) b.Launch("conv", 7010 + k * 20, 7600 + k * 50, 40);
  const trace::TraceModel m = b.Done();
  const std::vector<KernelSequence> s = FrequentKernelSequences(m, BuildOpTree(m), {});
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].op, "aten::linear");
  EXPECT_EQ(s[0].kernels, (std::vector<std::string>{"gemm", "bias", "relu"}));
  EXPECT_EQ(s[0].calls, 3);
  EXPECT_EQ(s[0].total_ns, 3 * (100 + 20) + 10 + 11 + 12);
  KernelSequenceOptions once;
  once.min_calls = 1;
  EXPECT_EQ(FrequentKernelSequences(m, BuildOpTree(m), once).size(), 2u);  // and conv2d's
}

// A stream's queue figures, checked together.
struct QueueFigures {
  int64_t changes, max_length;
  double mean_length;
  int64_t span_ns;
  double time_mean_length;
  int64_t blocked_ns;
};
void ExpectQueue(const StreamQueue& q, const QueueFigures& want) {
  EXPECT_EQ(q.changes, want.changes);
  EXPECT_EQ(q.max_length, want.max_length);
  EXPECT_DOUBLE_EQ(q.mean_length, want.mean_length);
  EXPECT_EQ(q.span_ns, want.span_ns);
  EXPECT_DOUBLE_EQ(q.time_mean_length, want.time_mean_length);
  EXPECT_EQ(q.blocked_ns, want.blocked_ns);
}

TEST(QueueLength, OutstandingLaunchesPerStream) {
  ModelBuilder b;
  for (int64_t k = 0; k < 3; ++k) b.Launch("k", 10 * k, 100 * (k + 1), 50);
  const trace::TraceModel m = b.Done();
  // +1 at 0, 10, 20; -1 at 100, 200, 300: lengths 1 2 3 2 1 0.
  std::vector<StreamQueue> q = QueueLengthSummary(m, 3);
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(q[0].stream, 7);
  ExpectQueue(q[0], {.changes = 6,
                     .max_length = 3,
                     .mean_length = 9.0 / 6,
                     .span_ns = 300,
                     .time_mean_length = (1 * 10 + 2 * 10 + 3 * 80 + 2 * 100 + 1 * 100) / 300.0,
                     .blocked_ns = 80});
  EXPECT_EQ(QueueLengthSummary(m)[0].blocked_ns, 0);  // CUDA's 1024 is far away
}

// A launch at the very time an operation starts does not wait behind it; the trace's order of
// events does not matter.
TEST(QueueLength, StartsCountBeforeLaunchesAtTheSameTime) {
  ModelBuilder b;
  b.Launch("k", 100, 150, 10);  // launched when the other starts
  b.Launch("k", 0, 100, 50);
  const trace::TraceModel m = b.Done();
  // +1 at 0, -1 at 100, +1 at 100, -1 at 150: lengths 1 0 1 0.
  std::vector<StreamQueue> q = QueueLengthSummary(m, 1);
  ASSERT_EQ(q.size(), 1u);
  ExpectQueue(q[0], {.changes = 4,
                     .max_length = 1,
                     .mean_length = 0.5,
                     .span_ns = 150,
                     .time_mean_length = 1.0,
                     .blocked_ns = 150});
}

// The tree keeps its times in 4 bytes with wider ones aside: an operator of 5 s around one of
// 3 s whose kernels run 2.5 s (over int32's 2.1 s) and 1.5 s, 4 s in all, and a sum that passes
// 2^31 only as its third kernel of 1 s is added.
TEST(OperatorView, TimesOverTwoSecondsAreExact) {
  constexpr int64_t kS = 1'000'000'000;
  ModelBuilder b;
  b.Add(EventKind::kCpuOp, "aten::outer", 0, 5 * kS, kHost);
  b.Add(EventKind::kCpuOp, "aten::inner", kS, 3 * kS, kHost);
  b.Launch("gemm_a", kS + 10, kS + 100, 5 * kS / 2);
  b.Launch("gemm_b", kS + 20, 4 * kS, 3 * kS / 2);
  b.Add(EventKind::kCpuOp, "aten::small", 4 * kS + 100, 1000, kHost);
  for (int i = 0; i < 3; ++i) b.Launch("gemm_c", 4 * kS + 200 + i * 100, 6 * kS + i * kS, kS);
  const trace::TraceModel m = b.Done();
  const OpTree t = BuildOpTree(m);
  ASSERT_EQ(t.nodes.size(), 3u);
  EXPECT_EQ(t.host_self_ns[0], 5 * kS - 3 * kS - 1000);
  EXPECT_EQ(t.host_self_ns[1], 3 * kS - 20);  // less its two runtime calls
  EXPECT_EQ(t.device_self_ns[1], 4 * kS);
  EXPECT_EQ(t.device_total_ns[1], 4 * kS);
  EXPECT_EQ(t.device_self_ns[2], 3 * kS);  // 1 s, 2 s, then 3 s: wide on the third add
  EXPECT_EQ(t.device_total_ns[0], 7 * kS);
  const std::vector<OperatorRow> ops = OperatorView(m, t);
  EXPECT_EQ(Row(ops, "aten::outer").device_total_ns, 7 * kS);
  EXPECT_EQ(Row(ops, "aten::small").device_self_ns, 3 * kS);
  EXPECT_EQ(Row(ops, "aten::small").host_self_ns, 1000 - 30);
}

// On real traces: every GPU event a range launched is counted once, in exactly one device self
// time, and reaches the top of its tree; kernel totals add up to the trace's kernel time.
TEST(OperatorView, RealTracesAddUp) {
  TRAINPROF_SKIP_WITHOUT_SHARED_TRACES();
  const std::string dir = std::string(TRAINPROF_SHARED_DIR) + "/data/traces/";
  for (const char* folder : {"ns_resolution_trace", "nccl_parser_config", "cpu_only"}) {
    auto files = trace::ListTraceFiles(dir + folder);
    ASSERT_TRUE(files.ok()) << folder;
    auto models = trace::ReadTraceFiles(*files, {});
    ASSERT_TRUE(models.ok()) << folder;
    for (const trace::TraceModel& m : *models) {
      const OpTree t = BuildOpTree(m);
      int64_t owned = 0, kernels = 0;
      for (size_t i = 0; i < m.size(); ++i) {
        if (trace::IsGpuKind(m.kind[i]) && t.owner[i] >= 0) owned += m.dur_ns[i];
        if (m.kind[i] == EventKind::kKernel) kernels += m.dur_ns[i];
      }
      int64_t self = 0, top = 0;
      for (size_t k = 0; k < t.nodes.size(); ++k) {
        const OpNode& n = t.nodes[k];
        self += t.device_self_ns[k];
        if (n.parent < 0) top += t.device_total_ns[k];
        if (m.kind[n.event] == EventKind::kCpuOp) {
          EXPECT_GE(t.host_self_ns[k], 0) << m.name_of(n.event);
        }
        EXPECT_GE(t.device_total_ns[k], t.device_self_ns[k]);
      }
      EXPECT_EQ(self, owned) << folder;
      EXPECT_EQ(top, owned) << folder;
      int64_t listed = 0;
      for (const KernelRow& k : KernelView(m, t, false)) listed += k.total_ns;
      EXPECT_EQ(listed, kernels) << folder;
      if (std::string(folder) != "cpu_only") {
        EXPECT_GT(owned, 0) << folder;
      }
    }
  }
}

}  // namespace
}  // namespace trainprof::analysis
