// CUPTI activity records turned into gpu::ActivityData. Only reads the records (CUPTI's headers,
// no CUPTI calls), so it is tested on records made by hand on a machine without a GPU.
//
//   gpu::RecordSink sink;
//   for (each CUpti_Activity* r in a completed buffer) cupti::AppendRecord(*r, sink);
//   gpu::ActivityData d = sink.Take(t0_ns);
#pragma once

#include <cupti.h>

#include <cstdint>
#include <string>
#include <unordered_map>

#include "trace/inprocess/activity.h"

namespace trainprof::cupti {

// The external correlation kind trainprof pushes its operator call ids under. Kineto (the
// PyTorch profiler) uses CUSTOM0 and CUSTOM1, so the two can run together.
inline constexpr CUpti_ExternalCorrelationKind kExternalKind =
    CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2;

// Collects converted records; kernel and API names are interned.
class RecordSink {
 public:
  uint32_t Intern(const char* name);
  gpu::ActivityData& data() { return data_; }
  uint64_t unknown_records = 0;  // kinds trainprof does not read (overhead, context, ...)
  // The data, sorted by time, with times moved to ns since `t0_ns` (CUPTI's clock is
  // steady_clock ns once the collector registered its timestamp callback).
  gpu::ActivityData Take(int64_t t0_ns);

 private:
  gpu::ActivityData data_;
  std::unordered_map<std::string, uint32_t> index_;
};

// The name CUPTI gives a runtime or driver callback id ("cudaLaunchKernel"); "cbid N" if none.
using ApiNameFn = std::string (*)(bool driver, uint32_t cbid);

void AppendRecord(const CUpti_Activity& record, RecordSink& sink, ApiNameFn api_name);

}  // namespace trainprof::cupti
