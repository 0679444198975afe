// HTA's augmented counters, queue length part (get_queue_length_summary and
// get_time_spent_blocked_on_full_queue): per CUDA stream, the number of outstanding operations,
// +1 when a launch call (cudaLaunchKernel, cudaMemcpyAsync, cudaMemsetAsync, ...) enqueues GPU
// work on the stream, -1 when that work starts on the GPU.
//
//   std::vector<StreamQueue> q = QueueLengthSummary(model, kFullQueue);
#pragma once

#include <cstdint>
#include <vector>

#include "trace/trace_model.h"

namespace trainprof::analysis {

// CUDA's queue depth: a launch on a stream with this many outstanding operations blocks the CPU.
inline constexpr int64_t kFullQueue = 1024;

struct StreamQueue {
  int64_t stream = -1;
  int64_t changes = 0;  // points where the length changed (HTA's samples)
  int64_t max_length = 0;
  double mean_length = 0;       // over the changes, as HTA's summary does
  double time_mean_length = 0;  // weighted by time, from the first launch to the last start
  int64_t blocked_ns = 0;       // time with at least `full` outstanding operations
  int64_t span_ns = 0;          // first launch to last GPU start
};

// Every stream with launched GPU work, in stream order, over the whole trace (as HTA). Events
// without a matched launch call are left out. Never fails.
std::vector<StreamQueue> QueueLengthSummary(const trace::TraceModel& m, int64_t full = kFullQueue);

}  // namespace trainprof::analysis
