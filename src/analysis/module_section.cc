// The Module view section (module_view.h): the nn.Module tree with host and device time.
#include <algorithm>
#include <string>

#include "analysis/views.h"

namespace trainprof::analysis {

using report::Unit;

void AddModuleSection(const AnalyzeInput& in, report::Report& r) {
  report::Section& s = r.AddSection("module_view", "Module view");
  report::Table& t = AddRankTable(
      s, in, "module_view", "Time per nn.Module",
      {{"rank", "Rank", Unit::kText},
       {.key = "module", .title = "Module", .terminal_width = 80},
       {"path", "Path", Unit::kText, false},
       {"depth", "Depth", Unit::kCount, false},
       {"calls", "Calls", Unit::kCount},
       {"host_s", "Host time", Unit::kSeconds},
       {"device_s", "Device time", Unit::kSeconds},
       {"self_device_s", "Device self", Unit::kSeconds}},
      report::TableKind::kTable,
      [](const RankAnalysis& a, const std::string& rank,
         std::vector<std::vector<report::Value>>& rows) {
        for (const ModuleRow& m : a.modules)
          rows.push_back({rank, std::string(2 * static_cast<size_t>(m.depth), ' ') + m.name, m.path,
                          static_cast<int64_t>(m.depth), m.calls, Seconds(m.host_ns),
                          Seconds(m.device_ns), Seconds(m.self_device_ns)});
      });
  if (!in.ManyRanks()) MarkLong(t);
  const bool any =
      std::ranges::any_of(in.analyses, [](const RankAnalysis& a) { return !a.modules.empty(); });
  if (!any)
    s.notes.push_back(
        "No nn.Module ranges: record with with_stack=True (or with_modules=True) to see modules.");
}

}  // namespace trainprof::analysis
