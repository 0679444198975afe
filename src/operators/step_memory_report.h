// Per-step memory reports of the Python package: the CUDA caching allocator's figures
// (torch.cuda.memory_stats) and the activation memory counted by saved-tensor hooks.
//
//   std::vector<torchlib::CudaMemoryStep> steps = ...;   // one per Session.step()
//   torchlib::AddCudaMemorySection(steps, report);
//   torchlib::AddActivationSection(activations, report);
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "report/report.h"

namespace trainprof::torchlib {

// torch.cuda.memory_stats() at the end of a step; the peaks are the step's own (the allocator's
// peaks are reset after every step).
struct CudaMemoryStep {
  int64_t step = 0;
  int64_t allocated = 0, allocated_peak = 0;
  int64_t reserved = 0, reserved_peak = 0;
  int64_t active = 0, active_peak = 0;
  int64_t alloc_retries = 0;  // num_alloc_retries, cumulative
  int64_t ooms = 0;           // num_ooms, cumulative
};

// The "cuda_memory" section: the peaks as metrics (peak_allocated_bytes is a key figure of the
// run history), the per-step table as a series, a warning when the allocator had to free its
// cache and retry (fragmentation or memory pressure) or ran out of memory.
void AddCudaMemorySection(const std::vector<CudaMemoryStep>& steps, report::Report& report);

// Bytes saved for backward in one training step, parameters excluded, each storage counted once.
struct ActivationStep {
  int64_t step = 0;
  int64_t bytes = 0;
  int64_t tensors = 0;
  std::vector<std::pair<std::string, int64_t>> by_module;  // top-level module -> bytes
};

// The "activation_memory" section: the peak and median per step, per-step and per-module tables.
void AddActivationSection(const std::vector<ActivationStep>& steps, report::Report& report);

}  // namespace trainprof::torchlib
