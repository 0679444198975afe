// HTA 0.6.1's get_aten_op_kernels_and_delay: every kernel launch call (HTA's pattern:
// cuda...LaunchKernel, cuLaunchKernel, runFunction) inside an aten:: operator, with the innermost
// such operator, the times of the operator, the call and the kernel, on HTA's selection and µs
// times (--hta-compat). The drop-in groups them as HTA does.
//
//   for (const AtenOpLaunch& l : HtaAtenOpLaunches(model, RankHtaOptions(model, o.hta))) ...
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/hta/hta_events.h"
#include "trace/trace_model.h"

namespace trainprof::analysis {

struct AtenOpLaunch {
  int64_t tid = 0;       // the operator's thread
  std::string op;        // "aten::mul"
  int64_t op_ts_ns = 0;  // the operator's start (its identity with tid and op)
  int64_t launch_ts_ns = 0, kernel_ts_ns = 0;
  int64_t correlation = 0;
  std::string kernel;
};

// In the launch calls' order in the trace. Never fails.
std::vector<AtenOpLaunch> HtaAtenOpLaunches(const trace::TraceModel& m, const HtaOptions& o);

}  // namespace trainprof::analysis
