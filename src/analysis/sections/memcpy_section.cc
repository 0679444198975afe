// The memcpy bandwidth section: memcpy_bandwidth.h's figures per rank and direction.
#include "analysis/memcpy_bandwidth.h"
#include "analysis/sections/sections.h"

namespace trainprof::analysis {

using report::Unit;

void AddMemcpyBandwidthSection(const AnalyzeInput& in, report::Report& r) {
  report::Section& s = r.AddSection("memcpy_bandwidth", "Memcpy bandwidth");
  report::Table& t = AddRankTablesTable(
      s, in, "memcpy_bandwidth", "Memcpy bandwidth per direction",
      {{"rank", "Rank", Unit::kText},
       {"direction", "Direction", Unit::kText},
       {"copies", "Copies", Unit::kCount},
       {"bytes", "Bytes", Unit::kBytes},
       {"time_s", "Time", Unit::kSeconds},
       {"bandwidth", "Mean bandwidth", Unit::kBytesPerSecond},
       {"max_bandwidth", "Fastest copy", Unit::kBytesPerSecond}},
      [](const RankTables& t, const std::string& rank,
         std::vector<std::vector<report::Value>>& rows) {
        for (const MemcpyBandwidth& b : t.memcpy)
          rows.push_back({rank, b.direction, b.copies, b.bytes, Seconds(b.dur_ns), b.bytes_per_s(),
                          static_cast<double>(b.max_bytes_per_s)});
      });
  bool any_bytes = false, any = false;
  ForEachRankTables(in, [&](size_t, const RankTables& tables) {
    for (const MemcpyBandwidth& b : tables.memcpy) any = true, any_bytes |= b.dur_ns > 0;
  });
  if (any_bytes)
    t.charts.push_back(
        {.kind = report::ChartKind::kBars, .label = "direction", .values = {"bandwidth"}});
  if (!any)
    s.notes.push_back("No memcpy events.");
  else if (!any_bytes)
    s.notes.push_back("The memcpy events carry no \"bytes\": no bandwidth to show.");
  else
    s.notes.push_back(
        "Mean bandwidth: the bytes of a direction's copies over their summed duration (HTA's "
        "memcpy bandwidth counter, summed per direction).");
}

}  // namespace trainprof::analysis
