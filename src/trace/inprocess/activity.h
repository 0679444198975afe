// What a GPU activity collector (CUPTI's Activity API, src/cupti/) records, as plain data: the
// device work (kernels, copies, memsets, synchronizations), the runtime and driver calls that
// launched it, and the external correlation ids that tie a launch to the operator that made it.
// No CUDA types, so everything computed from it is tested on hand-made records.
//
//   gpu::ActivityData d = collector.Stop();           // times in ns since the session start
//   gpu::SetDeviceTimes(rec, model, op_data);         // Self CUDA / CUDA total (gpu/correlate.h)
//   gpu::AddGpuTrace(d, trace);                       // kernels etc. in Kineto's trace format
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace trainprof::gpu {

enum class ActivityKind : uint8_t { kKernel, kMemcpy, kMemset, kSync };

// Memcpy directions, as CUPTI's CUpti_ActivityMemcpyKind numbers them.
enum class CopyKind : uint8_t {
  kUnknown = 0,
  kHtoD = 1,
  kDtoH = 2,
  kHtoA = 3,
  kAtoH = 4,
  kAtoA = 5,
  kAtoD = 6,
  kDtoA = 7,
  kDtoD = 8,
  kHtoH = 9,
  kPtoP = 10,
};
const char* CopyKindName(CopyKind kind);  // "HtoD", ...

// One piece of work that ran on a device.
struct DeviceActivity {
  ActivityKind kind = ActivityKind::kKernel;
  uint32_t name = 0;  // index into ActivityData::names: the kernel's or the sync call's name
  int32_t device = 0;
  uint32_t context = 0;
  int64_t stream = 0;
  int64_t begin_ns = 0, end_ns = 0;
  uint32_t correlation = 0;  // the launching runtime / driver call's; 0 if none
  // Kernels.
  int32_t grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
  int32_t registers = 0;
  int64_t shared_bytes = 0;  // static + dynamic
  // Copies and memsets.
  int64_t bytes = 0;
  CopyKind copy = CopyKind::kUnknown;
};

// A CUDA runtime or driver API call (cudaLaunchKernel, cuLaunchKernel, cudaMemcpyAsync, ...).
struct ApiCall {
  uint32_t name = 0;  // index into ActivityData::names
  int64_t tid = 0;
  int64_t begin_ns = 0, end_ns = 0;
  uint32_t correlation = 0;
  bool driver = false;
};

// CUPTI's external correlation record: the runtime call `correlation` ran while the operator
// call `external_id` was the innermost one pushed on its thread.
struct ExternalCorrelation {
  uint32_t correlation = 0;
  uint64_t external_id = 0;
};

struct DeviceInfo {
  int32_t id = 0;
  std::string name;
  int64_t total_memory = 0;
  int32_t major = 0, minor = 0;
  int32_t sms = 0;
  int32_t max_threads_per_block = 0, max_threads_per_sm = 0, max_blocks_per_sm = 0;
  int32_t max_registers_per_block = 0, max_registers_per_sm = 0, warp_size = 32;
  int64_t max_shared_per_block = 0, max_shared_per_sm = 0;
};

struct ActivityData {
  std::vector<std::string> names;
  std::vector<DeviceActivity> device;  // sorted by begin_ns
  std::vector<ApiCall> api;            // sorted by begin_ns
  std::vector<ExternalCorrelation> external;
  std::vector<DeviceInfo> devices;
  uint64_t dropped = 0;  // records CUPTI reported as lost
};

// correlation id -> the operator call id CUPTI's external correlation records give it.
std::unordered_map<uint32_t, uint64_t> ExternalIds(const ActivityData& a);

}  // namespace trainprof::gpu
