// The operator tree of the TensorBoard plugin, on a TraceModel: per host thread, cpu_op,
// user_annotation and python_function ranges nest by time; a runtime call (cudaLaunchKernel, ...)
// belongs to the innermost range around it, and the GPU work it launched (by correlation id)
// to that range. From the tree, as the plugin defines them:
//   host total  = the range's duration;
//   host self   = host total - its child ranges - its own runtime calls;
//   device self = GPU time (kernels, memcpy, memset) launched by its own runtime calls;
//   device total = device self + the children's device total;
//   tc self / total = the same over kernels that use Tensor Cores;
//   tc eligible = a cpu_op in the plugin's list (aten::mm, aten::conv2d, ...), or one with an
//                 eligible child op or a Tensor Core kernel of its own.
//
//   OpTree t = BuildOpTree(model);
//   for (const OpNode& n : t.nodes) total += n.device_total_ns;
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "trace/trace_model.h"

namespace trainprof::analysis {

struct OpNode {
  uint32_t event = 0;   // index in the model
  int32_t parent = -1;  // index in OpTree::nodes, -1 at a thread's top level
  int64_t host_self_ns = 0;
  int64_t device_self_ns = 0, device_total_ns = 0;
  int64_t tc_self_ns = 0, tc_total_ns = 0;
  bool tc_eligible = false;
};

struct OpTree {
  std::vector<OpNode> nodes;  // parents before children
  // Per model event: the node whose runtime call launched this GPU event, else -1.
  std::vector<int32_t> gpu_owner;
  // Per name id: 1 when a kernel of that name uses Tensor Cores (KernelUsesTensorCores), 0 when
  // not, -1 for names no launched kernel has.
  std::vector<int8_t> tc_by_name;
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
