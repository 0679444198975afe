#include "cupti/cupti_collector.h"

#include <cupti.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>

#include "cupti/cupti_records.h"

namespace trainprof::cupti {
namespace {

constexpr size_t kAlign = 8;  // CUPTI's required buffer alignment

// CUPTI's callbacks carry no user pointer: the running collector's records live here.
struct Shared {
  std::mutex mu;
  RecordSink sink;
  size_t buffer_bytes = 0;
  uint64_t dropped = 0;
};
Shared* g_shared = nullptr;
std::atomic<bool> g_running{false};

std::string ApiName(bool driver, uint32_t cbid) {
  const char* name = nullptr;
  const CUpti_CallbackDomain domain =
      driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API;
  if (cuptiGetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS || name == nullptr) {
    return fmt::format("cbid {}", cbid);
  }
  std::string s = name;
  // CUPTI names versioned entry points "cudaLaunchKernel_v7000"; Kineto writes the bare name.
  const size_t v = s.rfind("_v");
  if (v != std::string::npos && v + 2 < s.size() &&
      s.find_first_not_of("0123456789", v + 2) == std::string::npos) {
    s.resize(v);
  }
  return s;
}

void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = g_shared != nullptr ? g_shared->buffer_bytes : size_t{8} << 20;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kAlign, *size));
  *max_records = 0;  // as many as fit
}

void CUPTIAPI BufferCompleted(CUcontext, uint32_t stream, uint8_t* buffer, size_t, size_t valid) {
  if (g_shared != nullptr) {
    std::lock_guard<std::mutex> lock(g_shared->mu);
    CUpti_Activity* record = nullptr;
    while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
      AppendRecord(*record, g_shared->sink, &ApiName);
    }
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(nullptr, stream, &dropped) == CUPTI_SUCCESS) {
      g_shared->dropped += dropped;
    }
  }
  std::free(buffer);
}

uint64_t CUPTIAPI SteadyNowNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

Status Check(CUptiResult r, const char* what) {
  if (r == CUPTI_SUCCESS) return Status::Ok();
  const char* text = nullptr;
  cuptiGetResultString(r, &text);
  return FailedPrecondition(
      fmt::format("CUPTI: {} failed: {}", what, text != nullptr ? text : "unknown error"));
}

// CUPTI loads the driver itself; without one every call fails with a less clear message.
Status CheckDriver() {
  void* h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (h == nullptr) {
    return NotFound(fmt::format(
        "CUPTI: no CUDA driver on this machine ({}); GPU activity needs an NVIDIA driver and GPU",
        dlerror()));
  }
  dlclose(h);
  return Status::Ok();
}

constexpr CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_DEVICE,
                                         CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                         CUPTI_ACTIVITY_KIND_MEMCPY,
                                         CUPTI_ACTIVITY_KIND_MEMSET,
                                         CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
                                         CUPTI_ACTIVITY_KIND_RUNTIME,
                                         CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION};

void DisableAll(bool driver_api) {
  for (CUpti_ActivityKind k : kKinds) cuptiActivityDisable(k);
  if (driver_api) cuptiActivityDisable(CUPTI_ACTIVITY_KIND_DRIVER);
}

}  // namespace

StatusOr<std::unique_ptr<Collector>> Collector::Start(const CollectorOptions& options) {
  if (g_running.exchange(true)) {
    return FailedPrecondition("CUPTI: a collector is already running in this process");
  }
  Status s = CheckDriver();
  if (s.ok()) {
    g_shared = new Shared;
    g_shared->buffer_bytes = options.buffer_bytes;
    s = Check(cuptiActivityRegisterCallbacks(&BufferRequested, &BufferCompleted),
              "registering the buffer callbacks");
  }
  if (s.ok()) {
    s = Check(cuptiActivityRegisterTimestampCallback(&SteadyNowNs), "setting the clock");
  }
  // Runtime calls on the thread ids the operator observer records (gettid): CUPTI's default is
  // pthread_self(), which would put every launch on a thread of its own, outside the operator
  // that made it, in trace.json and in the op tree that charges kernels to operators.
  if (s.ok()) {
    s = Check(cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM),
              "asking for system thread ids");
  }
  for (CUpti_ActivityKind k : kKinds) {
    if (s.ok()) s = Check(cuptiActivityEnable(k), "enabling an activity kind");
  }
  if (s.ok() && options.driver_api) {
    s = Check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER), "enabling driver calls");
  }
  if (!s.ok()) {
    DisableAll(options.driver_api);
    delete g_shared;
    g_shared = nullptr;
    g_running = false;
    return s;
  }
  return std::unique_ptr<Collector>(new Collector());
}

Collector::~Collector() {
  if (!stopped_) Stop(0);
}

void Collector::PushCall(uint64_t id) { cuptiActivityPushExternalCorrelationId(kExternalKind, id); }

void Collector::PopCall() {
  uint64_t id = 0;
  cuptiActivityPopExternalCorrelationId(kExternalKind, &id);
}

gpu::ActivityData Collector::Stop(int64_t t0_ns) {
  stopped_ = true;
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  DisableAll(/*driver_api=*/true);
  gpu::ActivityData d;
  {
    std::lock_guard<std::mutex> lock(g_shared->mu);
    d = g_shared->sink.Take(t0_ns);
    d.dropped = g_shared->dropped;
  }
  delete g_shared;
  g_shared = nullptr;
  g_running = false;
  return d;
}

}  // namespace trainprof::cupti
