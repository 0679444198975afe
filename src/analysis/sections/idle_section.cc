// The idle-cause section: idle_causes.h's figures, per rank by cause, and the longest gaps.
#include <algorithm>
#include <cctype>

#include "analysis/idle_causes.h"
#include "analysis/sections/sections.h"

namespace trainprof::analysis {

using report::Unit;

namespace {

void AddCauseTable(report::Section& s, const AnalyzeInput& in) {
  std::vector<report::Column> cols{{"rank", "Rank", Unit::kText},
                                   {"idle_s", "GPU idle", Unit::kSeconds}};
  std::vector<std::string> cause_keys;  // "data_loader_s", ...: the chart's stacked values
  for (int c = 0; c < kIdleCauses; ++c) {
    std::string name = IdleCauseName(c);
    std::string key = name;
    for (char& ch : key)
      ch = ch == ' ' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    name[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(name[0])));
    cause_keys.push_back(key + "_s");
    cols.push_back({cause_keys.back(), name, Unit::kSeconds});
  }
  cols.push_back({"cause", "Largest cause", Unit::kText});
  report::Table& t =
      AddRankTablesTable(s, in, "idle_causes", "GPU idle time by what the host was doing", cols,
                         [](const RankTables& tables, const std::string& rank,
                            std::vector<std::vector<report::Value>>& rows) {
                           const IdleCauses& c = tables.idle;
                           if (c.idle_ns == 0) return;
                           std::vector<report::Value> row{rank, Seconds(c.idle_ns)};
                           for (int64_t ns : c.ns) row.push_back(Seconds(ns));
                           row.push_back(std::string(IdleCauseName(c.Largest())));
                           rows.push_back(std::move(row));
                         });
  t.charts.push_back(
      {.kind = report::ChartKind::kBars, .label = "rank", .values = std::move(cause_keys)});
}

void AddGapTable(report::Section& s, const AnalyzeInput& in) {
  AddRankTable(s, in, "idle_gaps", "Longest GPU idle gaps",
               {{"rank", "Rank", Unit::kText},
                {"gpu", "GPU", Unit::kCount},
                {"start_s", "Starts after step 1", Unit::kSeconds},
                {"length_s", "Length", Unit::kSeconds},
                {"share_pct", "Share of idle", Unit::kPercent},
                {"cause", "Host was mostly in", Unit::kText},
                {"host", "Longest host range in it", Unit::kText}},
               report::TableKind::kTable,
               [](const RankAnalysis& a, const std::string& label,
                  std::vector<std::vector<report::Value>>& rows) {
                 const int64_t origin = a.steps.steps.empty() ? 0 : a.steps.steps[0].begin_ns;
                 const IdleCauses& idle = a.tables->idle;  // held
                 for (const IdleGap& g : idle.largest) {
                   rows.push_back(report::MakeRow(
                       label, g.device, Seconds(g.begin_ns - origin), Seconds(g.dur_ns()),
                       100.0 * static_cast<double>(g.dur_ns()) /
                           static_cast<double>(std::max<int64_t>(1, idle.idle_ns)),
                       std::string(IdleCauseName(g.cause)), g.host));
                 }
               });
}

}  // namespace

void AddIdleSection(const AnalyzeInput& in, report::Report& r) {
  report::Section& s = r.AddSection("idle_causes", "GPU idle time by cause");
  if (!AnyRankTables(in, [](const RankTables& t) { return t.idle.idle_ns > 0; })) {
    s.notes.push_back("No GPU idle time inside the analysed steps (or no GPU work).");
    return;
  }
  AddCauseTable(s, in);
  AddGapTable(s, in);
  s.notes.push_back(
      "Each stretch of a GPU's idle time inside the analysed steps goes to the first of: the "
      "data loader, a blocking synchronisation, other CUDA/HIP API calls (launching), an "
      "operator on the CPU, or none of these (Python between operators, or a thread the trace "
      "did not record) that the rank's host threads were in at that time.");
}

}  // namespace trainprof::analysis
