// HTA's memcpy bandwidth counter, summed per direction: the bytes of the memcpy events (their
// "bytes" arg) over their duration, per "Memcpy HtoD", "DtoH", "DtoD", ...
//
//   for (const MemcpyBandwidth& b : MemcpyBandwidthByDirection(model))
//     fmt::print("{}: {} GB/s\n", b.direction, b.bytes_per_s() / 1e9);
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trace/trace_model.h"

namespace trainprof::analysis {

struct MemcpyBandwidth {
  std::string direction;  // "HtoD", "DtoH", "DtoD", "HtoH", "PtoP", or "other"
  int64_t copies = 0;
  int64_t bytes = 0;            // of the copies that carry "bytes"
  int64_t dur_ns = 0;           // of those copies
  int64_t max_bytes_per_s = 0;  // the fastest copy
  int64_t copy_ns = 0;          // every copy's duration, bytes known or not
  int64_t pageable_ns = 0;      // of copy_ns: copies from or to pageable host memory
  double bytes_per_s() const { return dur_ns > 0 ? bytes * 1e9 / static_cast<double>(dur_ns) : 0; }
};

// "Memcpy DtoD (Device -> Device)" -> "DtoD"; "other" when the name says none.
std::string MemcpyDirection(std::string_view name);

// One row per direction seen, by bytes, largest first; empty without memcpy events.
std::vector<MemcpyBandwidth> MemcpyBandwidthByDirection(const trace::TraceModel& m);

}  // namespace trainprof::analysis
