// GPU time of scopes (time.cuda_events): each recorded scope records a CUDA event on the legacy
// default stream as it begins and ends, from a pool created at the start, and the elapsed GPU
// time between the two is read once at the end, so the training loop is never synchronized.
// The CUDA runtime is loaded with dlopen (the one PyTorch already loaded, else libcudart.so.*;
// TRAINPROF_CUDART names another), so trainprof needs no CUDA to build.
//
//   TRAINPROF_RETURN_IF_ERROR(record::StartCudaEvents(1 << 16));   // sets g_cuda_events
//   ... scopes run ...
//   record::StopCudaEvents();                                       // no new marks
//   std::vector<int64_t> gpu_ns = record::CudaEventTimes();          // by slot - 1
//   record::ReleaseCudaEvents();
#pragma once

#include <cstdint>
#include <vector>

#include "trainprof/status.h"

namespace trainprof::record {

// Loads the runtime and creates `pairs` event pairs. Errors: NotFound, no CUDA runtime or no
// device; FailedPrecondition, the runtime refused (its message) or events are already in use.
Status StartCudaEvents(int64_t pairs);
// Scopes stop marking (the pool stays for CudaEventTimes).
void StopCudaEvents();
// GPU ns between each used pair's two events (waits for them); -1 where the runtime failed.
std::vector<int64_t> CudaEventTimes();
// Scopes that found the pool used up.
uint64_t CudaEventsExhausted();
// Destroys the events and forgets the pool.
void ReleaseCudaEvents();

}  // namespace trainprof::record
