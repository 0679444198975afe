// HTA's per-launch table (get_cuda_kernel_launch_stats' frame of each rank): every GPU event
// started by a launch call, with the call's duration, the GPU event's duration and the delay from
// the end of the call to the start of the GPU work. The aggregate counts of the report's
// kernel_launch_stats table come from the same pairs (hta.cc).
//
//   HtaOptions hta = RankHtaOptions(model, options.hta);
//   std::vector<KernelLaunch> l = CudaKernelLaunches(model, summary.analysis.steps, hta);
#pragma once

#include <cstdint>
#include <vector>

#include "analysis/hta/hta.h"
#include "analysis/steps.h"
#include "trace/trace_model.h"

namespace trainprof::analysis {

struct KernelLaunch {
  int64_t correlation = 0;
  int64_t cpu_ns = 0;    // the launch call's duration
  int64_t gpu_ns = 0;    // the GPU event's duration
  int64_t delay_ns = 0;  // GPU start - launch call end, 0 when negative (as HTA clips it)
  // Where and when, for HTA's queue length (+1 at the call, -1 when the GPU work starts): both
  // starts on the trace's clock (TraceModel::ts_ns), and the GPU event's stream, pid and tid.
  int64_t launch_ts_ns = 0, gpu_ts_ns = 0;
  int64_t stream = -1, pid = 0, tid = 0;
};

// `o` as one rank is analysed: with --hta-compat HTA drops the last step only when the trace
// names at least two distinct ProfilerSteps.
HtaOptions RankHtaOptions(const trace::TraceModel& m, const HtaOptions& o);

// One row per GPU event of the HTA selection (hta_events.h) whose launch call is a kernel,
// memcpy or memset launch, in the file order of the launch calls (as HTA's merge); a
// CUDA graph's kernels each get a row (they share the graph launch's correlation id). Never
// fails.
// `trace_duration_ns` (may be null) gets HTA's get_trace_duration with --hta-compat: the
// span of the starts of the events it keeps.
std::vector<KernelLaunch> CudaKernelLaunches(const trace::TraceModel& m, const StepsResult& steps,
                                             const HtaOptions& o,
                                             int64_t* trace_duration_ns = nullptr);
// The same from a selection made already (SelectHtaEvents).
std::vector<KernelLaunch> CudaKernelLaunches(const HtaEvents& ev,
                                             int64_t* trace_duration_ns = nullptr);

}  // namespace trainprof::analysis
