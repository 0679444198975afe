// `analyze`: a run's headline figures, its findings ranked by the step time they could save,
// and the ids of its tables, from the report `trainprof analyze` writes.
#include <fmt/format.h>

#include <cmath>

#include "analysis/finding_rules.h"
#include "history/key_figures.h"
#include "mcp/arguments.h"
#include "mcp/report_parts.h"
#include "mcp/run_cache.h"
#include "report/format.h"

namespace trainprof::mcp {

namespace {

Json Figures(const report::Report& r) {
  Json out = Json::array();
  const history::KeyFigures k = history::ExtractKeyFigures(r);
  for (size_t i = 0; i < history::kFigures.size(); ++i) {
    if (std::isnan(k.values[i])) continue;
    const history::FigureInfo& f = history::kFigures[i];
    std::string text = report::FormatHuman(k.values[i], f.unit);
    if (*f.suffix) text += fmt::format(" {}", f.suffix);
    out.push_back({{"key", f.key},
                   {"title", f.title},
                   {"value", k.values[i]},
                   {"unit", report::UnitName(f.unit)},
                   {"text", text}});
  }
  return out;
}

Json Findings(const report::Report& r) {
  Json out = Json::array();
  for (const report::Section& s : r.sections) {
    for (size_t i = 0; i < s.findings.size(); ++i) {
      Json f = FindingJson(s, i, s.findings[i]);
      if (const analysis::FindingRule* rule = analysis::FindFindingRule(s.findings[i].rule)) {
        f["threshold"] = rule->threshold;
        Json tables = Json::array();
        for (const analysis::EvidenceTable& e : rule->evidence)
          if (FindTableById(r, e.table, nullptr) != nullptr) tables.push_back(e.table);
        f["evidence_tables"] = std::move(tables);
      }
      out.push_back(std::move(f));
    }
  }
  return out;
}

Json Tables(const report::Report& r) {
  Json out = Json::array();
  for (const report::Section& s : r.sections) {
    if (!s.no_data.empty()) continue;
    for (const report::Table& t : s.tables) {
      size_t rows = 0;
      t.ForEachRowBlock([&](const auto& block) { rows += block.size(); });
      Json cols = Json::array();
      for (const report::Column& c : t.columns) cols.push_back(c.key);
      out.push_back({{"id", TableId(s, t)}, {"title", t.title}, {"rows", rows}, {"columns", cols}});
    }
  }
  return out;
}

StatusOr<Json> Analyze(const Json& args, ToolContext& ctx) {
  TRAINPROF_ASSIGN_OR_RETURN(auto run, ctx.cache->Get(args, ctx));
  const report::Report& r = run->report();
  Json metrics = Json::array(), no_data = Json::array();
  for (const report::Section& s : r.sections) {
    if (!s.no_data.empty()) no_data.push_back({{"section", s.id}, {"why", s.no_data}});
    for (const report::Metric& m : s.metrics) metrics.push_back(MetricJson(s, m));
  }
  Json out = {{"input", run->paths},
              {"kind", r.kind},
              {"title", r.title},
              {"read_from", run->run_folder ? "report.json" : "traces"},
              {"figures", Figures(r)},
              {"metrics", std::move(metrics)},
              {"findings", Findings(r)},
              {"tables", Tables(r)},
              {"sections_without_data", std::move(no_data)},
              {"diagnostics", DiagnosticsJson(r)}};
  if (const report::Value* ranks = r.FindMeta("ranks")) out["ranks"] = report::ValueToJson(*ranks);
  out["next"] =
      "Ask `table` with a table id for its rows (filtered, sorted, a page at a time), "
      "`findings` for each finding's evidence rows and threshold, `explain` for what a rule, "
      "metric or table means.";
  return out;
}

}  // namespace

Tool AnalyzeTool() {
  return {"analyze", "Analyze a training trace",
          "Analyzes a PyTorch profiler trace, a folder of rank traces, an Nsight Systems SQLite "
          "export, a memory snapshot or a trainprof run folder, as `trainprof analyze` does. "
          "Returns the headline figures (step time, throughput, GPU utilization, ...), every "
          "metric, the findings ranked by the step time they could save (with their rule, "
          "ranks and threshold), and the ids of the report's tables. The run is read once per "
          "connection: later calls on it (table, findings, explain) are answered from memory.",
          ObjectSchema(RunProperties(), {"path"}), Analyze};
}

}  // namespace trainprof::mcp
