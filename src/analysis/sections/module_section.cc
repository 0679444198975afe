// The Module view section (module_view.h): the nn.Module tree with host and device time.
#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include "analysis/ranks/detail_store.h"
#include "analysis/sections/sections.h"

namespace trainprof::analysis {

using report::Unit;

namespace {

// Many ranks: per module (its path), its device time over the ranks, in the first rank's order.
// Each rank's modules alone are read back from the detail store for this one pass
// (detail_store.h).
void AddModulesAcrossRanks(report::Section& s, const AnalyzeInput& in) {
  AcrossRanks across;
  std::unordered_map<std::string, ModuleRow> first;  // path -> its first row
  std::vector<ModuleRow> scratch;
  for (size_t i = 0; i < in.analyses.size(); ++i) {
    for (const ModuleRow& m : ModulesOf(in.analyses[i], scratch)) {
      first.try_emplace(m.path, m);
      across.Add(m.path, i, static_cast<double>(m.device_ns));
    }
  }
  std::vector<report::Column> cols = {{.key = "module", .title = "Module", .terminal_width = 80},
                                      {"path", "Path", Unit::kText, false},
                                      {"depth", "Depth", Unit::kCount, false}};
  for (report::Column& c : AcrossRanks::Columns("device time")) cols.push_back(std::move(c));
  report::Table& t =
      s.AddTable("module_view_across_ranks", "Device time per nn.Module across ranks", cols);
  for (const AcrossRanks::Row& row : across.Rows()) {
    const ModuleRow& m = first.at(row.key);
    std::vector<report::Value> v = {std::string(2 * static_cast<size_t>(m.depth), ' ') + m.name,
                                    m.path, static_cast<int64_t>(m.depth)};
    for (report::Value& c : AcrossRanks::Cells(row, in)) v.push_back(std::move(c));
    t.rows.push_back(std::move(v));
  }
  MarkLong(t);
}

}  // namespace

void AddModuleSection(const AnalyzeInput& in, report::Report& r) {
  report::Section& s = r.AddSection("module_view", "Module view");
  report::Table& t =
      AddRankTable(s, in, "module_view", "Time per nn.Module",
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
                     for (const ModuleRow& m : a.lists->modules)
                       rows.push_back(report::MakeRow(
                           rank, std::string(2 * static_cast<size_t>(m.depth), ' ') + m.name,
                           m.path, static_cast<int64_t>(m.depth), m.calls, Seconds(m.host_ns),
                           Seconds(m.device_ns), Seconds(m.self_device_ns)));
                   });
  if (!in.ManyRanks()) MarkLong(t);
  if (in.ManyRanks()) AddModulesAcrossRanks(s, in);
  const bool any =
      std::ranges::any_of(in.analyses, [](const RankAnalysis& a) { return ModuleRows(a) > 0; });
  if (any) {
    AddCoverageMetric(s, in, "device_coverage_pct", "GPU time under a module", &ModuleRootNs);
  } else {
    s.notes.push_back(
        !in.AnyPyTorch() ? "No modules: the profile has no PyTorch in it (no aten or autograd "
                           "ranges)."
        : in.FromNsys()  ? "No nn.Module ranges: emit_nvtx marks operators, not modules. Wrap "
                           "modules in torch.cuda.nvtx.range, or take a torch.profiler trace "
                           "with with_stack=True, to see them."
                         : "No nn.Module ranges: record with with_stack=True (or "
                           "with_modules=True) to see modules.");
  }
}

}  // namespace trainprof::analysis
