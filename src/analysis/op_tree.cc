#include "analysis/op_tree.h"

#include <algorithm>
#include <array>
#include <utility>

#include "analysis/kernel_class.h"
#include "analysis/steps.h"
#include "base/name_memo.h"

namespace trainprof::analysis {

using trace::EventKind;

namespace {

bool IsRangeKind(EventKind k) {
  return k == EventKind::kCpuOp || k == EventKind::kUserAnnotation ||
         k == EventKind::kPythonFunction;
}
bool IsRuntimeKind(EventKind k) { return k == EventKind::kRuntime || k == EventKind::kDriver; }

// Sorts [b, e) by `less`, merging its ascending runs pairwise: linear for data already in order,
// a few passes for data in a few runs, O(n log n) at worst.
template <class T, class Less>
void SortRuns(T* b, T* e, Less less) {
  std::vector<T*> runs{b};
  for (T* k = b + 1; k < e; ++k)
    if (less(*k, *(k - 1))) runs.push_back(k);
  runs.push_back(e);
  while (runs.size() > 2) {
    std::vector<T*> merged{b};
    size_t i = 0;
    for (; i + 2 < runs.size(); i += 2) {
      std::inplace_merge(runs[i], runs[i + 1], runs[i + 2], less);
      merged.push_back(runs[i + 2]);
    }
    if (i + 1 < runs.size() && merged.back() != e) merged.push_back(e);
    runs = std::move(merged);
  }
}

// Host ranges and runtime calls in (thread, start, longest first, ranges before calls) order,
// so that a sweep with a stack sees every parent before its children. Kineto writes a thread's
// host events in a few ordered runs, so the events are grouped by track, keeping file order, and
// each track's runs merged (SortRuns), not sorted from scratch. The order compares the model's
// columns, not a copy of them: on a 1 GB trace a 24-byte key per event was 44 MB.
std::vector<uint32_t> HostEventsInOrder(const trace::TraceModel& m) {
  auto host = [&](size_t i) { return IsRuntimeKind(m.kind[i]) || IsRangeKind(m.kind[i]); };
  std::vector<size_t> start;  // per track, then its first event's place
  for (size_t i = 0; i < m.size(); ++i) {
    if (!host(i)) continue;
    if (m.track[i] >= start.size()) start.resize(m.track[i] + 1, 0);
    ++start[m.track[i]];
  }
  size_t total = 0;
  for (size_t& s : start) total += std::exchange(s, total);
  std::vector<uint32_t> ev(total);
  std::vector<size_t> end = start;
  for (size_t i = 0; i < m.size(); ++i)
    if (host(i)) ev[end[m.track[i]]++] = static_cast<uint32_t>(i);
  auto less = [&](uint32_t a, uint32_t b) {
    if (m.ts_ns[a] != m.ts_ns[b]) return m.ts_ns[a] < m.ts_ns[b];
    const int64_t ea = m.end_ns(a), eb = m.end_ns(b);
    if (ea != eb) return ea > eb;
    const bool ra = IsRuntimeKind(m.kind[a]), rb = IsRuntimeKind(m.kind[b]);
    return ra != rb ? rb : a < b;
  };
  for (size_t t = 0; t < start.size(); ++t)
    SortRuns(ev.data() + start[t], ev.data() + end[t], less);
  return ev;
}

// Nests the ranges and gives every runtime call its owner (t.owner); host self time is left as
// the duration minus everything directly inside it.
void Nest(const trace::TraceModel& m, OpTree& t) {
  t.owner.assign(m.size(), -1);
  std::vector<int32_t> stack;
  uint32_t track = UINT32_MAX;
  const std::vector<uint32_t> order = HostEventsInOrder(m);
  const size_t ranges =
      std::ranges::count_if(order, [&](uint32_t e) { return IsRangeKind(m.kind[e]); });
  t.nodes.reserve(ranges);
  t.host_self_ns.reserve(ranges);
  for (uint32_t e : order) {
    if (m.track[e] != track) stack.clear(), track = m.track[e];
    while (!stack.empty() && m.end_ns(t.nodes[stack.back()].event) < m.end_ns(e)) stack.pop_back();
    int32_t parent = stack.empty() ? -1 : stack.back();
    // Copied from a capture into a graph replay (graph_capture.h): under the range around the
    // graph launch call, whose own time already left that range's host self.
    if (parent >= 0) {
      t.host_self_ns.Add(parent, -m.dur_ns[e]);
    } else if (const int32_t call = m.CapturedInOf(e); call >= 0) {
      parent = t.owner[static_cast<size_t>(call)];
    }
    if (IsRuntimeKind(m.kind[e])) {
      t.owner[e] = parent;
      continue;
    }
    t.nodes.push_back({.event = e, .parent = parent});
    t.host_self_ns.push_back(m.dur_ns[e]);
    stack.push_back(static_cast<int32_t>(t.nodes.size() - 1));
  }
}

// Device self time of each node from the GPU work its runtime calls launched; the GPU work's
// owner is its launching call's.
void AttributeGpuWork(const trace::TraceModel& m, OpTree& t) {
  std::vector<int8_t>& tc = t.tc_by_name;
  tc.assign(m.names.size(), -1);
  t.device_self_ns.assign(t.nodes.size(), 0);
  const bool captured = !m.captured_launcher.empty();
  for (size_t i = 0; i < m.size(); ++i) {
    if (!trace::IsGpuKind(m.kind[i])) continue;
    t.gpu_ns += m.dur_ns[i];
    if (m.launcher.empty()) continue;
    const int32_t l = captured ? m.OwnLauncherOf(i) : m.launcher[i];
    if (l < 0) continue;
    const int32_t owner = IsRuntimeKind(m.kind[l]) ? t.owner[l] : -1;
    if (owner < 0) continue;
    t.owner[i] = owner;
    t.device_self_ns.Add(owner, m.dur_ns[i]);
    if (m.kind[i] != EventKind::kKernel) continue;
    int8_t& uses = tc[m.name[i]];
    if (uses < 0) uses = KernelUsesTensorCores(m.name_of(i)) ? 1 : 0;
    if (!uses) continue;
    if (t.tc_self_ns.empty()) t.tc_self_ns.assign(t.nodes.size(), 0);
    t.tc_self_ns.Add(owner, m.dur_ns[i]);
  }
}

// Device and Tensor Core totals, children first (they follow their parents in `nodes`).
void SumTotals(OpTree& t) {
  t.device_total_ns = t.device_self_ns;
  t.tc_total_ns = t.tc_self_ns;
  for (size_t k = t.nodes.size(); k-- > 0;) {
    const OpNode& n = t.nodes[k];
    if (n.parent < 0) continue;
    t.device_total_ns.Add(n.parent, t.device_total_ns[k]);
    if (!t.tc_total_ns.empty()) t.tc_total_ns.Add(n.parent, t.tc_total_ns[k]);
  }
}

// GPU work launched from Python inside an operator (Triton's `<built-in function launch>`, a
// pybind11 kernel wrapper, with_stack's frames under aten::addmm) is that operator's device self
// time: the Python frames' own device self moves up through Python frames to the nearest cpu_op.
// Totals stay as they were, so a module range between the two keeps it in its device total.
void FoldPythonSelfIntoOperators(const trace::TraceModel& m, OpTree& t) {
  auto python = [&](int32_t n) {
    return n >= 0 && m.kind[t.nodes[static_cast<size_t>(n)].event] == EventKind::kPythonFunction;
  };
  std::vector<uint8_t> op_above(t.nodes.size(), 0);  // a cpu_op above, through Python frames only
  for (size_t k = 0; k < t.nodes.size(); ++k) {
    const int32_t p = t.nodes[k].parent;
    if (!python(static_cast<int32_t>(k)) || p < 0) continue;
    op_above[k] = python(p) ? op_above[static_cast<size_t>(p)]
                            : m.kind[t.nodes[static_cast<size_t>(p)].event] == EventKind::kCpuOp;
  }
  for (size_t k = t.nodes.size(); k-- > 0;) {
    if (!op_above[k] || (t.device_self_ns[k] == 0 && t.tc_self(k) == 0)) continue;
    const auto p = static_cast<size_t>(t.nodes[k].parent);
    t.device_self_ns.Add(p, t.device_self_ns[k]);
    t.device_self_ns.Set(k, 0);
    if (t.tc_self_ns.empty()) continue;
    t.tc_self_ns.Add(p, t.tc_self_ns[k]);
    t.tc_self_ns.Set(k, 0);
  }
}

// Tensor Core eligibility, children first.
void MarkEligible(const trace::TraceModel& m, OpTree& t) {
  std::vector<int8_t> eligible(m.names.size(), -1);  // per name id
  for (size_t k = 0; k < t.nodes.size(); ++k) {
    OpNode& n = t.nodes[k];
    if (m.kind[n.event] != EventKind::kCpuOp) continue;
    int8_t& e = eligible[m.name[n.event]];
    if (e < 0) e = IsTensorCoreEligibleOp(m.name_of(n.event)) ? 1 : 0;
    n.tc_eligible = n.tc_eligible || e == 1 || t.tc_self(k) > 0;
  }
  for (size_t k = t.nodes.size(); k-- > 0;) {
    const OpNode& n = t.nodes[k];
    if (n.parent < 0) continue;
    OpNode& p = t.nodes[n.parent];
    // A ProfilerStep#N range (a cpu_op in older traces) is a step, not an operator.
    if (n.tc_eligible && m.kind[p.event] == EventKind::kCpuOp &&
        ProfilerStepNumber(m.name_of(p.event)) < 0)
      p.tc_eligible = true;
  }
}

}  // namespace

bool IsTensorCoreEligibleOp(std::string_view name) {
  static constexpr std::array<std::string_view, 46> kOps = {
      "aten::_convolution",
      "aten::_convolution_nogroup",
      "aten::conv1d",
      "aten::conv2d",
      "aten::conv3d",
      "aten::conv_tbc",
      "aten::conv_transpose1d",
      "aten::conv_transpose2d",
      "aten::conv_transpose3d",
      "aten::convolution",
      "aten::cudnn_convolution",
      "aten::cudnn_convolution_transpose",
      "aten::prelu",
      "aten::addmm",
      "aten::addmv",
      "aten::addr",
      "aten::matmul",
      "aten::mm",
      "aten::mv",
      "aten::linear",
      "aten::addbmm",
      "aten::baddbmm",
      "aten::bmm",
      "aten::chain_matmul",
      "aten::linalg_multi_dot",
      "aten::_thnn_fused_lstm_cell",
      "aten::_thnn_fused_gru_cell",
      "aten::lstm_cell",
      "aten::gru_cell",
      "aten::rnn_tanh_cell",
      "aten::rnn_relu_cell",
      "CudnnConvolutionBackward",
      "BmmBackward0",
      "aten::cudnn_convolution_transpose_backward",
      "CudnnConvolutionTransposeBackward",
      "MmBackward",
      "aten::cudnn_convolution_backward_weight",
      "aten::addmm_",
      "AddmvBackward",
      "MvBackward",
      "aten::cudnn_convolution_transpose_backward_weight",
      "aten::cudnn_convolution_transpose_backward_input",
      "AddmmBackward",
      "aten::cudnn_convolution_backward_input",
      "AddbmmBackward",
      "aten::cudnn_convolution_backward",
  };
  return std::find(kOps.begin(), kOps.end(), name) != kOps.end();
}

namespace {

bool ScanForTensorCores(std::string_view name) {
  static constexpr std::array<std::string_view, 18> kPlugin = {
      "h884",
      "s884",
      "h1688",
      "s1688",
      "hmma",
      "i8816",
      "16816",
      "dgrad_1x1_stride_2x2",
      "first_layer_wgrad_kernel",
      "conv1x1",
      "conv2d_c1_k1",
      "direct_group",
      "xmma_implicit_gemm",
      "xmma_sparse_conv",
      "xmma_warp_specialized_implicit_gemm",
      "xmma_gemm",
      "xmma_sparse_gemm",
      "c1688"};
  if (UsesTensorCores(name)) return true;
  return std::any_of(kPlugin.begin(), kPlugin.end(),
                     [&](std::string_view p) { return name.find(p) != std::string_view::npos; });
}

}  // namespace

bool KernelUsesTensorCores(std::string_view name) {
  static base::NameMemo<bool> memo;
  return memo.Get(name, [&] { return ScanForTensorCores(name); });
}

bool IsExcludedFromOperatorView(std::string_view name) {
  // A ProfilerStep#N range is a step (a cpu_op in torch's legacy profiler), not an operator.
  return (name.starts_with("enumerate(DataLoader)#") && name.ends_with(".__next__")) ||
         name.starts_with("Optimizer.") || name == "DataParallel.forward" ||
         name == "DistributedDataParallel.forward" || ProfilerStepNumber(name) >= 0;
}

OpTree BuildOpTree(const trace::TraceModel& m) {
  OpTree t;
  Nest(m, t);
  AttributeGpuWork(m, t);
  SumTotals(t);
  FoldPythonSelfIntoOperators(m, t);
  MarkEligible(m, t);
  return t;
}

}  // namespace trainprof::analysis
