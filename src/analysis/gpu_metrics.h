// Per-GPU figures of the TensorBoard profiler plugin's GPU summary, over the steps' span
// [first step begin, last step end]: GPU utilization (time with at least one kernel running),
// est. SM efficiency (per kernel min(blocks per SM, 1), overlapping kernels summed then capped
// at 1), est. achieved occupancy (kernel-duration weighted), and the share of kernel time on
// Tensor Cores; plus the plugin's counter curves for the trace viewer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/steps.h"
#include "trace/trace_model.h"

namespace trainprof::analysis {

struct TimedValue {
  int64_t t_ns = 0;
  double value = 0;
};

struct GpuSummary {
  int64_t device = -1;
  std::string name;  // from deviceProperties, empty if absent
  int64_t memory_bytes = 0;
  std::string arch;  // "sm_80", "gfx942" (trace/devices.h); "" when unknown
  int64_t num_sms = 0;
  int64_t kernels = 0;    // kernels on this device
  int64_t kernel_ns = 0;  // their summed duration (inside the span)
  double utilization_pct = 0;
  std::optional<double> sm_efficiency_pct;  // none without "blocks per SM"
  std::optional<double> occupancy_pct;      // none without "est. achieved occupancy %"
  double tensor_core_pct = 0;               // kernel time on Tensor Cores / kernel time
  double simt_gemm_pct = 0;  // kernel time in GEMMs on the CUDA cores (IsSimtGemm) / kernel time
  // The plugin's counters, filled only when asked for: utilization in percent per time bucket
  // (then a closing 0), SM efficiency (a fraction) as (segment start, value) (segment end, 0)
  // pairs. The second has two points a kernel: 17 MB on a 1 GB trace, which no report shows.
  std::vector<TimedValue> utilization_curve;
  std::vector<TimedValue> sm_efficiency_curve;
};

std::vector<GpuSummary> ComputeGpuSummaries(const trace::TraceModel& m, const StepsResult& steps,
                                            bool with_curves = false);

}  // namespace trainprof::analysis
