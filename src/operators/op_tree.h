// Operator calls as torch.profiler reports them (a tree of FunctionEvents: each call knows its
// parent, its total memory and the kernels it launched) turned into the OpData the operator
// table is computed from. Self times, self memory, nesting depth, device totals and steps are
// computed here, so the Python package reports the numbers the LibTorch observer does.
//
//   std::vector<torchlib::TreeOp> calls = ...;            // from prof.events()
//   StatusOr<torchlib::OpData> d = torchlib::OpDataFromTree(calls, /*first_step=*/2);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "operators/op_events.h"
#include "trainprof/status.h"

namespace trainprof::torchlib {

struct TreeOp {
  std::string name;
  std::string shapes;  // "[[64, 1, 28, 28], [6, 1, 5, 5]]"; "" when not recorded
  int64_t begin_ns = 0, end_ns = 0;
  int64_t tid = 0;
  int64_t parent = -1;  // index of the enclosing call in the same vector, or -1
  // Net bytes allocated minus freed while the call ran, nested calls included (torch's
  // cpu_memory_usage / cuda_memory_usage).
  int64_t cpu_net = 0, cuda_net = 0;
  int64_t kernels_ns = 0;  // GPU time of the kernels the call launched itself
};

// Steps come from the "ProfilerStep#N" calls, or, as torch.profiler's events() name them all
// "ProfilerStep*", from their order counted from `first_step`: a call belongs to the step whose
// range holds its begin. Calls outside every step (the profiler's own calls as it starts and
// stops) count in `first_step`: torch.profiler recorded them in its active window, and its
// key_averages() counts them too. Self bytes are split into the gross
// allocated (positive net) and freed (negative net) fields: torch reports net bytes only. Errors: a
// call that ends before it begins, or a parent index that is not another call, naming the call.
StatusOr<OpData> OpDataFromTree(const std::vector<TreeOp>& calls, int64_t first_step);

}  // namespace trainprof::torchlib
