// The CUPTI collector: CUPTI's Activity API records every kernel, copy, memset and
// synchronization of the process's CUDA work, the runtime and driver calls that launched them,
// and the external correlation ids trainprof pushes around each operator call. Built with
// TRAINPROF_WITH_CUPTI (the CUDA toolkit's libcupti); runs only where a CUDA driver and a GPU
// are, and says so plainly elsewhere. One collector per process.
//
//   auto c = cupti::Collector::Start({});            // before the active steps
//   if (!c.ok()) ...                                   // no driver, no GPU, CUPTI busy
//   cupti::Collector::PushCall(call_id);  ...  cupti::Collector::PopCall();   // per operator
//   gpu::ActivityData d = (*c)->Stop(t0_ns);           // times in ns since t0 (steady_clock)
#pragma once

#include <cstdint>
#include <memory>

#include "trace/inprocess/activity.h"
#include "trainprof/status.h"

namespace trainprof::cupti {

struct CollectorOptions {
  size_t buffer_bytes = size_t{8} << 20;  // one activity buffer; CUPTI asks for more as needed
  bool driver_api = false;                // also record driver calls (cuLaunchKernel)
};

class Collector {
 public:
  // Enables the activity kinds and makes CUPTI's timestamps steady_clock ns. Errors: NotFound,
  // no CUDA driver (libcuda.so.1) can be loaded; FailedPrecondition, CUPTI refuses (its
  // message: no device, another profiler holds it) or a collector is already running.
  static StatusOr<std::unique_ptr<Collector>> Start(const CollectorOptions& options);
  ~Collector();  // stops if Stop() was not called

  // Tie the CUDA calls this thread makes until PopCall() to operator call `id`.
  static void PushCall(uint64_t id);
  static void PopCall();

  // Flushes CUPTI's buffers, disables the activity kinds, and returns everything recorded.
  gpu::ActivityData Stop(int64_t t0_ns);

  Collector(const Collector&) = delete;
  Collector& operator=(const Collector&) = delete;

 private:
  Collector() = default;
  bool stopped_ = false;
};

}  // namespace trainprof::cupti
