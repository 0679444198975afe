// PyTorch's key_averages() on the one op tree (op_tree.h): per operator name (and input shapes,
// when asked), its calls and the figures torch.profiler's table prints, for any TraceModel (a
// Kineto trace, the C++ job's recording read by trace/inprocess/).
//   self / total CPU  = the op tree's host self and the call's duration;
//   Self CUDA / total = the op tree's device self and device total;
//   memory            = the [memory] events inside the call on its thread, as the Memory view
//                       attributes them (memory_view.h): "self" those whose innermost cpu_op it
//                       is, "total" with those of the calls nested inside it; per device class
//                       (a GPU: Device Type 1, CUDA or HIP; else the CPU, as PyTorch counts them).
//
//   OpTree t = BuildOpTree(m);
//   std::vector<KeyAverage> rows = KeyAverages(m, t, /*by_shapes=*/false);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/op_tree.h"
#include "trace/trace_model.h"

namespace trainprof::analysis {

struct KeyAverage {
  std::string name;
  std::string shapes;  // the calls' "Input Dims" when grouped by shape, else ""
  int64_t calls = 0;
  int64_t self_ns = 0, total_ns = 0;
  int64_t self_device_ns = 0, device_total_ns = 0;
  // By device class, [0] the CPU, [1] a GPU: bytes allocated and freed by the call itself, and
  // the net bytes with those of the calls nested inside it.
  int64_t self_alloc[2] = {0, 0}, self_freed[2] = {0, 0}, total_net[2] = {0, 0};
};

// One row per name of a cpu_op, runtime or driver call, and with `annotations` of a host user
// annotation (record_function ranges and the ProfilerSteps, which torch.profiler's own table
// lists; they have times, not memory), and "Input Dims" with `by_shapes`, in the order of each
// row's first call in the model, as torch.profiler's table lists them: the op tree takes a
// runtime call's time out of the operator around it, and its own row shows it (the calls of
// every "ProfilerStep#N" are one row, "ProfilerStep*", as torch names them). The calls are
// those `counted` marks (by event index; null: all). No call is merged into its parent (torch's
// EventList dedup is the TensorBoard views', MergedIntoParent).
std::vector<KeyAverage> KeyAverages(const trace::TraceModel& m, const OpTree& t, bool by_shapes,
                                    const std::vector<bool>* counted = nullptr,
                                    bool annotations = false);

}  // namespace trainprof::analysis
