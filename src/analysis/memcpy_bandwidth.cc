#include "analysis/memcpy_bandwidth.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace trainprof::analysis {

std::string MemcpyDirection(std::string_view name) {
  for (std::string_view d : {"HtoD", "DtoH", "DtoD", "HtoH", "PtoP", "DtoA", "AtoD"})
    if (name.find(d) != std::string_view::npos) return std::string(d);
  return "other";
}

std::vector<MemcpyBandwidth> MemcpyBandwidthByDirection(const trace::TraceModel& m) {
  std::map<std::string, MemcpyBandwidth> by;
  std::unordered_map<uint32_t, MemcpyBandwidth*> by_name;  // a trace has a few copy names
  for (size_t i = 0; i < m.size(); ++i) {
    if (m.kind[i] != trace::EventKind::kMemcpy) continue;
    MemcpyBandwidth*& row = by_name[m.name[i]];
    if (row == nullptr) row = &by[MemcpyDirection(m.name_of(i))];
    MemcpyBandwidth& b = *row;
    ++b.copies;
    const int64_t bytes = m.MemcpyBytesOf(i);
    const int64_t dur = m.dur_ns[i];
    b.copy_ns += std::max<int64_t>(dur, 0);
    if (m.name_of(i).find("Pageable") != std::string_view::npos)
      b.pageable_ns += std::max<int64_t>(dur, 0);
    if (bytes < 0 || dur <= 0) continue;
    b.bytes += bytes;
    b.dur_ns += dur;
    b.max_bytes_per_s = std::max(b.max_bytes_per_s, bytes * 1'000'000'000 / dur);
  }
  std::vector<MemcpyBandwidth> out;
  for (auto& [d, b] : by) {
    b.direction = d;
    out.push_back(b);
  }
  std::ranges::stable_sort(out, [](const auto& a, const auto& b) { return a.bytes > b.bytes; });
  return out;
}

}  // namespace trainprof::analysis
