#include "cupti/cupti_records.h"

#include <algorithm>

namespace trainprof::cupti {
namespace {

using gpu::ActivityKind;
using gpu::DeviceActivity;

// The fields every device record has.
template <typename Record>
DeviceActivity Common(const Record& r, ActivityKind kind) {
  DeviceActivity a;
  a.kind = kind;
  a.device = static_cast<int32_t>(r.deviceId);
  a.context = r.contextId;
  a.stream = r.streamId;
  a.begin_ns = static_cast<int64_t>(r.start);
  a.end_ns = static_cast<int64_t>(r.end);
  a.correlation = r.correlationId;
  return a;
}

void AddKernel(const CUpti_ActivityKernel10& k, RecordSink& sink) {
  DeviceActivity a = Common(k, ActivityKind::kKernel);
  a.name = sink.Intern(k.name);
  a.grid[0] = k.gridX, a.grid[1] = k.gridY, a.grid[2] = k.gridZ;
  a.block[0] = k.blockX, a.block[1] = k.blockY, a.block[2] = k.blockZ;
  a.registers = k.registersPerThread;
  a.shared_bytes = int64_t{k.staticSharedMemory} + k.dynamicSharedMemory;
  sink.data().device.push_back(a);
}

void AddMemcpy(const CUpti_ActivityMemcpy6& m, RecordSink& sink) {
  DeviceActivity a = Common(m, ActivityKind::kMemcpy);
  a.copy = m.copyKind <= 10 ? static_cast<gpu::CopyKind>(m.copyKind) : gpu::CopyKind::kUnknown;
  a.name = sink.Intern((std::string("Memcpy ") + gpu::CopyKindName(a.copy)).c_str());
  a.bytes = static_cast<int64_t>(m.bytes);
  sink.data().device.push_back(a);
}

void AddMemset(const CUpti_ActivityMemset4& m, RecordSink& sink) {
  DeviceActivity a = Common(m, ActivityKind::kMemset);
  a.name = sink.Intern("Memset (Device)");
  a.bytes = static_cast<int64_t>(m.bytes);
  sink.data().device.push_back(a);
}

const char* SyncName(CUpti_ActivitySynchronizationType type) {
  switch (type) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE:
      return "cudaEventSynchronize";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT:
      return "cudaStreamWaitEvent";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE:
      return "cudaStreamSynchronize";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE:
      return "cudaDeviceSynchronize";
    default:
      return "Synchronization";
  }
}

void AddSync(const CUpti_ActivitySynchronization2& s, RecordSink& sink) {
  DeviceActivity a;
  a.kind = ActivityKind::kSync;
  a.name = sink.Intern(SyncName(s.type));
  a.context = s.contextId;
  // CUPTI gives no stream for a context-wide sync; Kineto draws those on stream -1.
  a.stream = s.streamId == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? -1 : int64_t{s.streamId};
  a.begin_ns = static_cast<int64_t>(s.start);
  a.end_ns = static_cast<int64_t>(s.end);
  a.correlation = s.correlationId;
  sink.data().device.push_back(a);
}

void AddApi(const CUpti_ActivityAPI& c, bool driver, RecordSink& sink, ApiNameFn api_name) {
  gpu::ApiCall call;
  call.name = sink.Intern(api_name(driver, c.cbid).c_str());
  call.tid = c.threadId;
  call.begin_ns = static_cast<int64_t>(c.start);
  call.end_ns = static_cast<int64_t>(c.end);
  call.correlation = c.correlationId;
  call.driver = driver;
  sink.data().api.push_back(call);
}

void AddDevice(const CUpti_ActivityDevice5& d, RecordSink& sink) {
  gpu::DeviceInfo i;
  i.id = static_cast<int32_t>(d.id);
  i.name = d.name != nullptr ? d.name : "";
  i.total_memory = static_cast<int64_t>(d.globalMemorySize);
  i.major = static_cast<int32_t>(d.computeCapabilityMajor);
  i.minor = static_cast<int32_t>(d.computeCapabilityMinor);
  i.sms = static_cast<int32_t>(d.numMultiprocessors);
  i.warp_size = static_cast<int32_t>(d.numThreadsPerWarp);
  i.max_threads_per_block = static_cast<int32_t>(d.maxThreadsPerBlock);
  i.max_threads_per_sm = static_cast<int32_t>(d.maxWarpsPerMultiprocessor * d.numThreadsPerWarp);
  i.max_blocks_per_sm = static_cast<int32_t>(d.maxBlocksPerMultiprocessor);
  i.max_registers_per_block = static_cast<int32_t>(d.maxRegistersPerBlock);
  i.max_registers_per_sm = static_cast<int32_t>(d.maxRegistersPerMultiprocessor);
  i.max_shared_per_block = d.maxSharedMemoryPerBlock;
  i.max_shared_per_sm = d.maxSharedMemoryPerMultiprocessor;
  sink.data().devices.push_back(i);
}

}  // namespace

uint32_t RecordSink::Intern(const char* name) {
  auto [it, added] =
      index_.emplace(name != nullptr ? name : "", static_cast<uint32_t>(data_.names.size()));
  if (added) data_.names.push_back(it->first);
  return it->second;
}

gpu::ActivityData RecordSink::Take(int64_t t0_ns) {
  for (auto& a : data_.device) a.begin_ns -= t0_ns, a.end_ns -= t0_ns;
  for (auto& c : data_.api) c.begin_ns -= t0_ns, c.end_ns -= t0_ns;
  auto by_begin = [](const auto& x, const auto& y) { return x.begin_ns < y.begin_ns; };
  std::stable_sort(data_.device.begin(), data_.device.end(), by_begin);
  std::stable_sort(data_.api.begin(), data_.api.end(), by_begin);
  index_.clear();
  return std::move(data_);
}

void AppendRecord(const CUpti_Activity& r, RecordSink& sink, ApiNameFn api_name) {
  switch (r.kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return AddKernel(reinterpret_cast<const CUpti_ActivityKernel10&>(r), sink);
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return AddMemcpy(reinterpret_cast<const CUpti_ActivityMemcpy6&>(r), sink);
    case CUPTI_ACTIVITY_KIND_MEMSET:
      return AddMemset(reinterpret_cast<const CUpti_ActivityMemset4&>(r), sink);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
      return AddSync(reinterpret_cast<const CUpti_ActivitySynchronization2&>(r), sink);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER:
      return AddApi(reinterpret_cast<const CUpti_ActivityAPI&>(r),
                    r.kind == CUPTI_ACTIVITY_KIND_DRIVER, sink, api_name);
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      const auto& x = reinterpret_cast<const CUpti_ActivityExternalCorrelation&>(r);
      if (x.externalKind == kExternalKind) {
        sink.data().external.push_back({x.correlationId, x.externalId});
      }
      return;
    }
    case CUPTI_ACTIVITY_KIND_DEVICE:
      return AddDevice(reinterpret_cast<const CUpti_ActivityDevice5&>(r), sink);
    default:
      ++sink.unknown_records;
  }
}

}  // namespace trainprof::cupti
