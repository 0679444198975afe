// The GPUs of a trace as they are: one id per physical device across kernels, memory events and
// deviceProperties, and each device's vendor, architecture and name.
//
// ROCm's tracer numbers a kernel's device by HSA agent, CPUs first: on a two-socket host the
// first GPU is "device 2", while PyTorch's memory events and deviceProperties call it 0. Where
// the trace shows which device the kernels' id stands for (one GPU id in the kernels, and one in
// the memory events or in deviceProperties) the kernels' id is mapped to it; where it cannot be
// told, a diagnostic says so and the ids are left as the trace writes them.
//
//   ResolveDevices(model);  // after the events and deviceProperties are read
//   model.FindDevice(model.device_of(kernel))->arch  // "gfx942"
#pragma once

#include <string>
#include <string_view>

#include "trace/trace_model.h"

namespace trainprof::trace {

// "gfx942" for an AMD Instinct MI300X, from its name, else "gfx94x" from the HIP compute
// version (9.4; the stepping is not in the trace); "sm_90" for an NVIDIA compute capability 9.0.
std::string ArchOf(const DeviceInfo& d);
// For an AMD device that the trace leaves unnamed (vLLM's traces): the Instinct model its
// architecture, compute units and memory identify, "" when they do not.
std::string InferAmdName(const DeviceInfo& d);

// `file` names the trace in the diagnostics.
void ResolveDevices(TraceModel& m, std::string_view file);

}  // namespace trainprof::trace
