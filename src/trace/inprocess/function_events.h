// torch.profiler's FunctionEvents (prof.events(): calls, each with the net bytes it and the calls
// inside it allocated) as an in-process recording (op_data.h), for
// the Python Session on a torch without Kineto, whose legacy trace export has neither input
// shapes nor memory. Read by ReadInProcess (inprocess_reader.h), the calls get the operator table
// and the memory views that a Kineto trace gets.
//
//   std::vector<trace::FunctionEvent> calls = ...;       // from prof.events()
//   StatusOr<torchlib::OpData> d = trace::OpDataOfFunctionEvents(calls, /*first_step=*/2);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trace/inprocess/op_data.h"
#include "trainprof/status.h"

namespace trainprof::trace {

struct FunctionEvent {
  std::string name;
  std::string shapes;  // "[[64, 1, 28, 28], [6, 1, 5, 5]]"; "" when not recorded
  int64_t begin_ns = 0, end_ns = 0;
  int64_t tid = 0;
  // Net bytes allocated minus freed while the call ran, nested calls included (torch's
  // cpu_memory_usage / cuda_memory_usage).
  int64_t cpu_net = 0, cuda_net = 0;
};

// The calls in time order. Steps come from the "ProfilerStep#N" calls, or, as events() names them
// all "ProfilerStep*", from their order counted from `first_step` (and are named
// "ProfilerStep#N"): a call belongs to the step whose range holds its begin; calls outside every
// step (the profiler's own, as it starts and stops) count in `first_step`. Calls nest by their
// times on each thread: a call is inside the innermost one open when it began (equal spans in the
// given order, the caller first). torch's times are whole microseconds, so each thread's begins
// and ends, taken depth first, move to at least 1 ns after the one before (a callee that ended
// 1 µs after its caller extends the caller by that): calls nest strictly. torch gives each call's
// net bytes only, so each call whose own bytes (its net less its callees') are not zero gets one
// allocator report of those bytes at its begin, with no address and the running total of its device
// class from 0 (CUDA as cuda:0). Errors: a call that ends before it begins, naming it.
StatusOr<torchlib::OpData> OpDataOfFunctionEvents(const std::vector<FunctionEvent>& calls,
                                                  int64_t first_step);

}  // namespace trainprof::trace
