// A GPU collector's records in trace.json, in the layout Kineto writes, so `trainprof analyze`,
// HTA and Perfetto read trainprof's own runs as they read torch.profiler's: kernels, copies and
// memsets in a process per device ("GPU 0", a track per stream), the runtime and driver calls on
// their CPU threads, launch-to-kernel flow arrows ("ac2g"), and "deviceProperties".
//
//   gpu::AddGpuTrace(activity, trace);   // before session::WriteTrace
#pragma once

#include <string>

#include "session/trace_export.h"
#include "trace/inprocess/activity.h"

namespace trainprof::gpu {

void AddGpuTrace(const ActivityData& activity, session::TraceInput& trace);

// Kineto's "deviceProperties" array for `devices`; "" when there are none.
std::string DevicePropertiesJson(const std::vector<DeviceInfo>& devices);

}  // namespace trainprof::gpu
