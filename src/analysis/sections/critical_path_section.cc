// The "critical_path" section of `trainprof analyze --critical-path`: each rank's windows'
// paths (critical_path_report.h finds them), their shares by category and their top events.
#include <fmt/format.h>

#include "analysis/ranks/critical_path_report.h"
#include "analysis/sections/sections.h"

namespace trainprof::analysis {

using report::Unit;
using report::Value;

void AddCriticalPathSection(const std::vector<RankInfo>& ranks, const std::vector<RankAnalysis>& an,
                            report::Report& r) {
  report::Section& s = r.AddSection("critical_path", "Critical path (HTA's algorithm)");
  std::vector<report::Column> cols = {{"rank", "Rank", Unit::kText},
                                      {"window", "Window", Unit::kText},
                                      {"length_s", "Length", Unit::kSeconds},
                                      {"nodes", "Nodes", Unit::kCount}};
  for (int c = 0; c + 1 < kNumCpCategories; ++c) {
    std::string name = CpCategoryName(static_cast<CpCategory>(c));
    cols.push_back({name + "_pct", name, Unit::kPercent});
  }
  report::Table& t = s.AddTable("critical_path", "Critical path per window", cols);
  report::Table& top = s.AddTable("critical_path_top_events", "Top events on the critical path",
                                  {{"rank", "Rank", Unit::kText},
                                   {"window", "Window", Unit::kText},
                                   {"name", "Event", Unit::kText, true, false, 90},
                                   {"category", "Category", Unit::kText},
                                   {"time_s", "Time on path", Unit::kSeconds},
                                   {"pct", "Share of path", Unit::kPercent}});
  std::array<int64_t, kNumCpCategories> sums{};
  int64_t length = 0, windows = 0;
  for (size_t i = 0; i < ranks.size(); ++i)
    for (const CpWindow& w : an[i].critical_paths) {
      if (!w.note.empty()) {
        s.notes.push_back(w.note);
        continue;
      }
      const std::string rank = fmt::format("{}", ranks[i].rank);
      std::vector<Value> row = {rank, w.label, Seconds(w.length_ns), w.nodes};
      for (int c = 0; c + 1 < kNumCpCategories; ++c) {
        row.push_back(w.pct(static_cast<CpCategory>(c)));
        sums[c] += w.category_ns[c];
      }
      t.rows.push_back(std::move(row));
      for (const CpWindow::Top& e : w.top)
        top.rows.push_back({rank, w.label, e.name, std::string(CpCategoryName(e.category)),
                            Seconds(e.ns), w.length_ns > 0 ? 100.0 * e.ns / w.length_ns : 0.0});
      length += w.length_ns;
      ++windows;
    }
  if (t.rows.size() > 40) t.kind = report::TableKind::kDetail;
  if (top.rows.size() > 40) top.kind = report::TableKind::kDetail;
  if (windows == 0) return;
  int64_t total = 0;
  for (int64_t v : sums) total += v;
  for (int c = 0; c + 1 < kNumCpCategories; ++c) {
    std::string name = CpCategoryName(static_cast<CpCategory>(c));
    s.AddMetric(name + "_pct", name + " (share of the critical path)",
                total > 0 ? 100.0 * static_cast<double>(sums[c]) / total : 0.0, Unit::kPercent);
  }
  s.AddMetric("length_s", "Critical path length (mean per window)",
              Seconds(length) / static_cast<double>(windows), Unit::kSeconds);
}

void AddCriticalPathView(const AnalyzeInput& in, report::Report& r) {
  if (in.options.critical_path) AddCriticalPathSection(in.ranks, in.analyses, r);
}

}  // namespace trainprof::analysis
