#include "analysis/memcpy_bandwidth.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "analysis/views.h"

namespace trainprof::analysis {

using report::Unit;

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

void AddMemcpyBandwidthSection(const AnalyzeInput& in, report::Report& r) {
  report::Section& s = r.AddSection("memcpy_bandwidth", "Memcpy bandwidth");
  report::Table& t = s.AddTable("memcpy_bandwidth", "Memcpy bandwidth per direction",
                                {{"rank", "Rank", Unit::kText},
                                 {"direction", "Direction", Unit::kText},
                                 {"copies", "Copies", Unit::kCount},
                                 {"bytes", "Bytes", Unit::kBytes},
                                 {"time_s", "Time", Unit::kSeconds},
                                 {"bandwidth", "Mean bandwidth", Unit::kBytesPerSecond},
                                 {"max_bandwidth", "Fastest copy", Unit::kBytesPerSecond}});
  bool any_bytes = false;
  for (size_t i = 0; i < in.ranks.size(); ++i)
    for (const MemcpyBandwidth& b : in.analyses[i].memcpy) {
      any_bytes |= b.dur_ns > 0;
      t.rows.push_back({in.RankLabel(i), b.direction, b.copies, b.bytes, Seconds(b.dur_ns),
                        b.bytes_per_s(), static_cast<double>(b.max_bytes_per_s)});
    }
  if (any_bytes)
    t.charts.push_back(
        {.kind = report::ChartKind::kBars, .label = "direction", .values = {"bandwidth"}});
  if (t.rows.empty())
    s.notes.push_back("No memcpy events.");
  else if (!any_bytes)
    s.notes.push_back("The memcpy events carry no \"bytes\": no bandwidth to show.");
  else
    s.notes.push_back(
        "Mean bandwidth: the bytes of a direction's copies over their summed duration (HTA's "
        "memcpy bandwidth counter, summed per direction).");
}

}  // namespace trainprof::analysis
