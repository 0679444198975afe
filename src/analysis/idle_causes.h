// Why the GPU was idle: each stretch of a GPU's idle time inside the analysed steps is set
// against what the rank's host threads were doing during it, in this order of blame:
//   data loader     inside a data-loader range (enumerate(DataLoader), --dataloader-pattern)
//   synchronisation inside a blocking call (cudaStreamSynchronize, cudaDeviceSynchronize,
//                   cudaEventSynchronize, a synchronous cudaMemcpy or hipMemcpyWithStream, and
//                   the HIP ones)
//   launch          inside other CUDA/HIP API calls (the launches themselves)
//   CPU operators   inside an operator (aten::..., framework work per operator)
//   between operators  none of these (Python between operators, a thread or process that was
//                   not profiled)
// Each nanosecond goes to the first cause that holds it, so the causes add up to the idle time.
// The longest gaps are kept with the cause that holds most of each: one long gap (a warm-up, a
// checkpoint, a barrier) reads differently from many short ones. A gap no longer than the
// trace's time resolution (1 ns, or 1 µs when every GPU time is whole microseconds) is the
// rounding of adjacent events' times, and no gap.
//
//   IdleCauses c = ComputeIdleCauses(m, steps, {});
//   IdleCause worst = c.Largest();
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/steps.h"
#include "trace/trace_model.h"

namespace trainprof::analysis {

enum IdleCause : int { kIdleDataLoader, kIdleSync, kIdleLaunch, kIdleCpuOps, kIdleElsewhere };
inline constexpr int kIdleCauses = 5;
// "data loader", "synchronisation", ... as tables and findings say them.
const char* IdleCauseName(int cause);

struct IdleGap {
  int64_t device = -1;
  int64_t begin_ns = 0, end_ns = 0;  // on the trace's clock
  int cause = kIdleElsewhere;        // the cause that holds most of it
  std::string host;  // the host range of that cause that overlaps it most ("" for none)
  int64_t dur_ns() const { return end_ns - begin_ns; }
};

struct IdleCauses {
  int64_t idle_ns = 0;  // GPU idle time inside the analysed steps, summed over the GPUs
  std::array<int64_t, kIdleCauses> ns{};
  std::vector<IdleGap> largest;  // the longest gaps, longest first (up to kLargestGaps)
  int Largest() const;           // the cause with the most time
};

inline constexpr size_t kLargestGaps = 10;

IdleCauses ComputeIdleCauses(const trace::TraceModel& m, const StepsResult& steps,
                             const std::vector<std::string>& dataloader_patterns,
                             const std::vector<std::string>& steps_from = {});

}  // namespace trainprof::analysis
