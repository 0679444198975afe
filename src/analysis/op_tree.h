// The operator tree of the TensorBoard plugin, on a TraceModel: per host thread, cpu_op,
// user_annotation and python_function ranges nest by time; a runtime call (cudaLaunchKernel, ...)
// belongs to the innermost range around it, and the GPU work it launched (by correlation id)
// to that range. From the tree, as the plugin defines them:
//   host total  = the range's duration;
//   host self   = host total - its child ranges - its own runtime calls;
//   device self = GPU time (kernels, memcpy, memset) launched by its own runtime calls, and, for
//                 a cpu_op, by those of the Python frames (python_function ranges) inside it
//                 down to the next cpu_op (Triton's launcher, pybind11 wrappers);
//   device total = device self + the children's device total;
//   tc self / total = the same over kernels that use Tensor Cores;
//   tc eligible = a cpu_op in the plugin's list (aten::mm, aten::conv2d, ...), or one with an
//                 eligible child op or a Tensor Core kernel of its own.
//
//   OpTree t = BuildOpTree(model);
//   for (size_t k = 0; k < t.nodes.size(); ++k) total += t.device_total_ns[k];
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "trace/trace_model.h"

namespace trainprof::analysis {

// 8 bytes; the node's times are OpTree's columns. A 1 GB trace has a million nodes, where 48-byte
// nodes with five int64 times were 53 MB.
struct OpNode {
  uint32_t event : 31 = 0;       // index in the model (the model's indices fit in int32)
  uint32_t tc_eligible : 1 = 0;  // 1 or 0
  int32_t parent = -1;           // index in OpTree::nodes, -1 at a thread's top level
};
static_assert(sizeof(OpNode) == 8);

struct OpTree {
  std::vector<OpNode> nodes;  // parents before children
  // Per node (its index in `nodes`), in nanoseconds: 4 bytes each, a time over 2.1 s aside.
  trace::Int64Column host_self_ns, device_self_ns, device_total_ns;
  // The same for kernels on Tensor Cores, read through tc_self() and tc_total(): both columns
  // stay empty when no kernel of the trace uses them, as in every fp32 run (9 MB on 1 GB).
  trace::Int64Column tc_self_ns, tc_total_ns;
  // Per model event: for GPU work, the node whose runtime call launched it; for a runtime call,
  // the innermost range around it; else -1. (One array for both: a 1 GB trace has 2.4 million
  // events, and runtime calls and GPU work are different events.)
  std::vector<int32_t> owner;
  // Per name id: 1 when a kernel of that name uses Tensor Cores (KernelUsesTensorCores), 0 when
  // not, -1 for names no launched kernel has.
  std::vector<int8_t> tc_by_name;
  // Every GPU event's time in the trace (kernels, memcpy, memset), launched or not.
  int64_t gpu_ns = 0;

  int64_t tc_self(size_t k) const { return tc_self_ns.empty() ? 0 : tc_self_ns[k]; }
  int64_t tc_total(size_t k) const { return tc_total_ns.empty() ? 0 : tc_total_ns[k]; }
};

// Never fails; a trace without host ranges gives an empty tree.
OpTree BuildOpTree(const trace::TraceModel& m);

// A kernel on Tensor Cores: the plugin's name list (h884, s1688, 16816, xmma_gemm, conv1x1, ...)
// or ours (UsesTensorCores in kernel_class.h: also Hopper's gmma, AMD's mfma, ...).
bool KernelUsesTensorCores(std::string_view kernel_name);
// The plugin's Tensor-Core-eligible operators (by exact name).
bool IsTensorCoreEligibleOp(std::string_view name);
// Operators the plugin leaves out of its Operator view: the DataLoader's __next__,
// "Optimizer.*", and the DataParallel wrappers' forward.
bool IsExcludedFromOperatorView(std::string_view name);

}  // namespace trainprof::analysis
