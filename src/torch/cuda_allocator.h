// The CUDA caching allocator of a CUDA LibTorch, from C++: its figures at the end of each step
// (what torch.cuda.memory_stats() gives Python) and its memory history, dumped as the same
// memory_snapshot.pickle torch.cuda.memory._dump_snapshot() writes. A build against a CPU
// LibTorch has neither, and each call says so (Unimplemented); TRAINPROF_TORCH_CUDA tells which.
//
//   if (torchlib::CudaAllocatorInUse()) {
//     torchlib::UseCudaDevice(local_rank);                      // the process's current device
//     auto step = torchlib::TakeCudaMemoryStep(step_index);     // peaks reset for the next
//     torchlib::StartCudaMemoryHistory("python", 1000000);      // snapshot.*
//     auto bytes = torchlib::DumpCudaMemoryHistory();           // and stops recording
//   }
#pragma once

#include <cstdint>
#include <string>

#include "operators/step_memory_report.h"
#include "trainprof/status.h"

namespace trainprof::torchlib {

// True when this build links a CUDA LibTorch and LibTorch sees a GPU.
bool CudaAllocatorInUse();

// Makes `device` the process's current CUDA device, where the allocator is read and NCCL
// works, as torch.cuda.set_device does.
Status UseCudaDevice(int device);

// The allocator's figures on the current device now, as the step `step`'s, then its peaks reset
// so the next step has its own.
StatusOr<CudaMemoryStep> TakeCudaMemoryStep(int64_t step);

// The bytes allocated on `device` now (its peaks untouched).
StatusOr<int64_t> CudaAllocatedBytes(int device);

// Starts recording every allocation and free (and the allocator's other actions), keeping the
// last `max_entries` events, each with its stack as snapshot.stacks says: "all" records the
// C++ frames (symbolized when dumped, which is slow); "python" records Python frames only, so a
// program without Python gets none.
Status StartCudaMemoryHistory(const std::string& stacks, int64_t max_entries);

// The recorded history and the allocator's segments, pickled as PyTorch's snapshot; recording
// stops.
StatusOr<std::string> DumpCudaMemoryHistory();

}  // namespace trainprof::torchlib
