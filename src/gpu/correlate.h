// Ties the device work a GPU collector recorded to the operator calls that launched it, as
// PyTorch's profiler does: a kernel's correlation id names its launching runtime call, whose
// external correlation id names the innermost operator call on the launching thread.
//
//   gpu::DeviceTimeStats s = gpu::AttributeDeviceTime(activity, op_data);
//   // op_data.ops[i].self_device_ns / device_ns now hold Self CUDA and CUDA total
#pragma once

#include <cstdint>

#include "operators/op_events.h"
#include "trace/inprocess/activity.h"

namespace trainprof::gpu {

struct DeviceTimeStats {
  int64_t attributed = 0;    // kernels, copies and memsets charged to an operator call
  int64_t unattributed = 0;  // launched outside every observed operator call
  int64_t attributed_ns = 0, unattributed_ns = 0;
};

// Sets each call's self_device_ns (the kernels, copies and memsets it launched itself) and
// device_ns (with those of the calls nested inside it on the same thread). Synchronization
// records are not work and count nowhere.
DeviceTimeStats AttributeDeviceTime(const ActivityData& activity, torchlib::OpData& ops);

}  // namespace trainprof::gpu
