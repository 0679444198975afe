#include "record/cuda_events.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <mutex>

#include "trainprof/scope.h"

namespace trainprof {
namespace internal {
std::atomic<bool> g_cuda_events{false};
}  // namespace internal

namespace record {
namespace {

using CudaEvent = void*;  // cudaEvent_t
using Err = int;          // cudaError_t; 0 is cudaSuccess

struct Runtime {
  Err (*create)(CudaEvent*, unsigned) = nullptr;
  Err (*record)(CudaEvent, void*) = nullptr;
  Err (*sync)(CudaEvent) = nullptr;
  Err (*elapsed)(float*, CudaEvent, CudaEvent) = nullptr;
  Err (*destroy)(CudaEvent) = nullptr;
  Err (*device_count)(int*) = nullptr;
  const char* (*error_string)(Err) = nullptr;
};

struct Pool {
  std::mutex mu;
  Runtime rt;
  std::vector<CudaEvent> events;  // 2 per pair: begin, end
  std::atomic<uint32_t> next{0};
  std::atomic<uint64_t> exhausted{0};
  bool started = false;
};
Pool g_pool;

// The runtime PyTorch already loaded, else the first libcudart found.
void* OpenRuntime() {
  if (const char* path = std::getenv("TRAINPROF_CUDART"); path != nullptr && *path != '\0') {
    return dlopen(path, RTLD_NOW | RTLD_LOCAL);
  }
  const char* names[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so"};
  for (const char* n : names) {
    if (void* h = dlopen(n, RTLD_NOW | RTLD_NOLOAD)) return h;
  }
  for (const char* n : names) {
    if (void* h = dlopen(n, RTLD_NOW | RTLD_LOCAL)) return h;
  }
  return nullptr;
}

template <typename F>
bool Load(void* h, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(h, name));
  return *out != nullptr;
}

Status LoadRuntime(Runtime* rt) {
  void* h = OpenRuntime();
  if (h == nullptr) {
    return NotFound("time.cuda_events: no CUDA runtime (libcudart) could be loaded");
  }
  const bool ok =
      Load(h, "cudaEventCreateWithFlags", &rt->create) && Load(h, "cudaEventRecord", &rt->record) &&
      Load(h, "cudaEventSynchronize", &rt->sync) && Load(h, "cudaEventElapsedTime", &rt->elapsed) &&
      Load(h, "cudaEventDestroy", &rt->destroy) &&
      Load(h, "cudaGetDeviceCount", &rt->device_count) &&
      Load(h, "cudaGetErrorString", &rt->error_string);
  if (!ok) return NotFound("time.cuda_events: the CUDA runtime lacks the event functions");
  int devices = 0;
  if (rt->device_count(&devices) != 0 || devices == 0) {
    return NotFound("time.cuda_events: the CUDA runtime sees no GPU");
  }
  return Status::Ok();
}

}  // namespace

Status StartCudaEvents(int64_t pairs) {
  std::lock_guard<std::mutex> lock(g_pool.mu);
  if (g_pool.started) return FailedPrecondition("time.cuda_events: already in use");
  TRAINPROF_RETURN_IF_ERROR(LoadRuntime(&g_pool.rt));
  g_pool.events.assign(static_cast<size_t>(2 * pairs), nullptr);
  for (CudaEvent& e : g_pool.events) {
    if (Err err = g_pool.rt.create(&e, 0); err != 0) {
      const std::string why = g_pool.rt.error_string(err);
      for (CudaEvent made : g_pool.events) {
        if (made != nullptr) g_pool.rt.destroy(made);
      }
      g_pool.events.clear();
      return FailedPrecondition(fmt::format("time.cuda_events: cudaEventCreate: {}", why));
    }
  }
  g_pool.next = 0;
  g_pool.exhausted = 0;
  g_pool.started = true;
  internal::g_cuda_events.store(true);
  return Status::Ok();
}

void StopCudaEvents() { internal::g_cuda_events.store(false); }

std::vector<int64_t> CudaEventTimes() {
  std::lock_guard<std::mutex> lock(g_pool.mu);
  const size_t used = std::min<size_t>(g_pool.next.load(), g_pool.events.size() / 2);
  std::vector<int64_t> ns(used, -1);
  for (size_t p = 0; p < used; ++p) {
    CudaEvent b = g_pool.events[2 * p], e = g_pool.events[2 * p + 1];
    float ms = 0;
    if (g_pool.rt.sync(e) == 0 && g_pool.rt.elapsed(&ms, b, e) == 0) {
      ns[p] = static_cast<int64_t>(static_cast<double>(ms) * 1e6);
    }
  }
  return ns;
}

uint64_t CudaEventsExhausted() { return g_pool.exhausted.load(); }

void ReleaseCudaEvents() {
  internal::g_cuda_events.store(false);
  std::lock_guard<std::mutex> lock(g_pool.mu);
  for (CudaEvent e : g_pool.events) g_pool.rt.destroy(e);
  g_pool.events.clear();
  g_pool.started = false;
}

}  // namespace record

namespace internal {

uint32_t CudaMarkBegin() noexcept {
  const uint32_t p = record::g_pool.next.fetch_add(1, std::memory_order_relaxed);
  if (p >= record::g_pool.events.size() / 2) {
    record::g_pool.exhausted.fetch_add(1, std::memory_order_relaxed);
    return 0;
  }
  record::g_pool.rt.record(record::g_pool.events[2 * p], nullptr);
  return p + 1;
}

void CudaMarkEnd(uint32_t slot) noexcept {
  record::g_pool.rt.record(record::g_pool.events[2 * (slot - 1) + 1], nullptr);
}

}  // namespace internal
}  // namespace trainprof
