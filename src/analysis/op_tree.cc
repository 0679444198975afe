#include "analysis/op_tree.h"

#include <algorithm>
#include <array>
#include <tuple>
#include <utility>

#include "analysis/kernel_class.h"

namespace trainprof::analysis {

using trace::EventKind;

namespace {

bool IsRangeKind(EventKind k) {
  return k == EventKind::kCpuOp || k == EventKind::kUserAnnotation ||
         k == EventKind::kPythonFunction;
}
bool IsRuntimeKind(EventKind k) { return k == EventKind::kRuntime || k == EventKind::kDriver; }

// Sorts [b, e) by merging its ascending runs pairwise: linear for data already in order, a few
// passes for data in a few runs, O(n log n) at worst.
template <class T>
void SortRuns(T* b, T* e) {
  std::vector<T*> runs{b};
  for (T* k = b + 1; k < e; ++k)
    if (*k < *(k - 1)) runs.push_back(k);
  runs.push_back(e);
  while (runs.size() > 2) {
    std::vector<T*> merged{b};
    size_t i = 0;
    for (; i + 2 < runs.size(); i += 2) {
      std::inplace_merge(runs[i], runs[i + 1], runs[i + 2]);
      merged.push_back(runs[i + 2]);
    }
    if (i + 1 < runs.size() && merged.back() != e) merged.push_back(e);
    runs = std::move(merged);
  }
}

// Host ranges and runtime calls in (thread, start, longest first, ranges before calls) order,
// so that a sweep with a stack sees every parent before its children. Kineto writes a thread's
// host events in a few ordered runs, so the keys are grouped by track, keeping file order, and
// each track's runs merged (SortRuns), not sorted from scratch.
std::vector<uint32_t> HostEventsInOrder(const trace::TraceModel& m) {
  struct Key {
    int64_t ts, neg_end;
    uint32_t event;
    bool runtime;
    bool operator<(const Key& o) const {
      return std::tie(ts, neg_end, runtime, event) < std::tie(o.ts, o.neg_end, o.runtime, o.event);
    }
  };
  auto host = [&](size_t i) { return IsRuntimeKind(m.kind[i]) || IsRangeKind(m.kind[i]); };
  std::vector<size_t> start;  // per track, then its first key's place
  for (size_t i = 0; i < m.size(); ++i) {
    if (!host(i)) continue;
    if (m.track[i] >= start.size()) start.resize(m.track[i] + 1, 0);
    ++start[m.track[i]];
  }
  size_t total = 0;
  for (size_t& s : start) total += std::exchange(s, total);
  std::vector<Key> keys(total);
  std::vector<size_t> end = start;
  for (size_t i = 0; i < m.size(); ++i) {
    if (host(i))
      keys[end[m.track[i]]++] = {m.ts_ns[i], -m.end_ns(i), static_cast<uint32_t>(i),
                                 IsRuntimeKind(m.kind[i])};
  }
  for (size_t t = 0; t < start.size(); ++t) SortRuns(keys.data() + start[t], keys.data() + end[t]);
  std::vector<uint32_t> ev(keys.size());
  for (size_t k = 0; k < keys.size(); ++k) ev[k] = keys[k].event;
  return ev;
}

// Nests the ranges and gives every runtime call its owner; host self time is left as the
// duration minus everything directly inside it. Returns the owner per runtime event.
std::vector<int32_t> Nest(const trace::TraceModel& m, OpTree& t) {
  std::vector<int32_t> rt_owner(m.size(), -1);
  std::vector<int32_t> stack;
  uint32_t track = UINT32_MAX;
  const std::vector<uint32_t> order = HostEventsInOrder(m);
  t.nodes.reserve(order.size());
  for (uint32_t e : order) {
    if (m.track[e] != track) stack.clear(), track = m.track[e];
    while (!stack.empty() && m.end_ns(t.nodes[stack.back()].event) < m.end_ns(e)) stack.pop_back();
    const int32_t parent = stack.empty() ? -1 : stack.back();
    if (parent >= 0) t.nodes[parent].host_self_ns -= m.dur_ns[e];
    if (IsRuntimeKind(m.kind[e])) {
      rt_owner[e] = parent;
      continue;
    }
    t.nodes.push_back({.event = e, .parent = parent, .host_self_ns = m.dur_ns[e]});
    stack.push_back(static_cast<int32_t>(t.nodes.size() - 1));
  }
  return rt_owner;
}

// Device self time of each node from the GPU work its runtime calls launched.
void AttributeGpuWork(const trace::TraceModel& m, const std::vector<int32_t>& rt_owner, OpTree& t) {
  t.gpu_owner.assign(m.size(), -1);
  std::vector<int8_t>& tc = t.tc_by_name;
  tc.assign(m.names.size(), -1);
  if (m.launcher.empty()) return;
  for (size_t i = 0; i < m.size(); ++i) {
    if (!trace::IsGpuKind(m.kind[i]) || m.launcher[i] < 0) continue;
    const int32_t owner = rt_owner[m.launcher[i]];
    if (owner < 0) continue;
    t.gpu_owner[i] = owner;
    OpNode& n = t.nodes[owner];
    n.device_self_ns += m.dur_ns[i];
    if (m.kind[i] != EventKind::kKernel) continue;
    int8_t& uses = tc[m.name[i]];
    if (uses < 0) uses = KernelUsesTensorCores(m.name_of(i)) ? 1 : 0;
    if (uses) n.tc_self_ns += m.dur_ns[i];
  }
}

// Totals and Tensor Core eligibility, children first (they follow their parents in `nodes`).
void Accumulate(const trace::TraceModel& m, OpTree& t) {
  std::vector<int8_t> eligible(m.names.size(), -1);  // per name id
  for (OpNode& n : t.nodes) {
    n.device_total_ns += n.device_self_ns;
    n.tc_total_ns += n.tc_self_ns;
    if (m.kind[n.event] != EventKind::kCpuOp) continue;
    int8_t& e = eligible[m.name[n.event]];
    if (e < 0) e = IsTensorCoreEligibleOp(m.name_of(n.event)) ? 1 : 0;
    n.tc_eligible = n.tc_eligible || e == 1 || n.tc_self_ns > 0;
  }
  for (size_t k = t.nodes.size(); k-- > 0;) {
    const OpNode& n = t.nodes[k];
    if (n.parent < 0) continue;
    OpNode& p = t.nodes[n.parent];
    p.device_total_ns += n.device_total_ns;
    p.tc_total_ns += n.tc_total_ns;
    if (n.tc_eligible && m.kind[p.event] == EventKind::kCpuOp) p.tc_eligible = true;
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

bool KernelUsesTensorCores(std::string_view name) {
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

bool IsExcludedFromOperatorView(std::string_view name) {
  return (name.starts_with("enumerate(DataLoader)#") && name.ends_with(".__next__")) ||
         name.starts_with("Optimizer.") || name == "DataParallel.forward" ||
         name == "DistributedDataParallel.forward";
}

OpTree BuildOpTree(const trace::TraceModel& m) {
  OpTree t;
  const std::vector<int32_t> rt_owner = Nest(m, t);
  AttributeGpuWork(m, rt_owner, t);
  Accumulate(m, t);
  return t;
}

}  // namespace trainprof::analysis
