// The CUDA caching allocator of a CUDA LibTorch, from C++: its figures at the end of each step
// (what torch.cuda.memory_stats() gives Python) and its memory history, dumped as the same
// memory_snapshot.pickle torch.cuda.memory._dump_snapshot() writes. A build against a CPU
// LibTorch has neither, and each call says so (Unimplemented); TRAINPROF_TORCH_CUDA tells which.
//
//   if (torchlib::CudaAllocatorInUse()) {
//     auto step = torchlib::TakeCudaMemoryStep(step_index, device);  // peaks reset for the next
//     torchlib::StartCudaMemoryHistory(max_entries);                   // snapshot.*
//     auto bytes = torchlib::DumpCudaMemoryHistory();                  // and stops recording
//   }
#pragma once

#include <cstdint>
#include <string>

#include "operators/step_memory_report.h"
#include "trainprof/status.h"

namespace trainprof::torchlib {

// True when this build links a CUDA LibTorch and LibTorch sees a GPU.
bool CudaAllocatorInUse();

// The allocator's figures on `device` now, as the step `step`'s, then its peaks reset so the
// next step has its own.
StatusOr<CudaMemoryStep> TakeCudaMemoryStep(int64_t step, int device);

// Starts recording every allocation and free with its C++ stack ("all" context), keeping the
// last `max_entries` events (0: LibTorch's default).
Status StartCudaMemoryHistory(int64_t max_entries);

// The recorded history and the allocator's segments, pickled as PyTorch's snapshot; recording
// stops.
StatusOr<std::string> DumpCudaMemoryHistory();

}  // namespace trainprof::torchlib
