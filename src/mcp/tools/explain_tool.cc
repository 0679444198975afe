// `explain`: what a rule, finding, metric or table means: its definition, threshold and doc
// section, and with a run, its value or the evidence behind it.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "analysis/finding_rules.h"
#include "analysis/sections/sections.h"
#include "mcp/arguments.h"
#include "mcp/evidence.h"
#include "mcp/report_parts.h"
#include "mcp/run_cache.h"

namespace trainprof::mcp {

namespace {

Json RuleJson(const analysis::FindingRule& rule) {
  Json tables = Json::array();
  for (const analysis::EvidenceTable& e : rule.evidence) tables.push_back(e.table);
  return {{"kind", "rule"},
          {"rule", std::string(rule.key.key())},
          {"title", rule.title},
          {"definition", rule.definition},
          {"threshold", rule.threshold},
          {"doc", analysis::DocOfSection(rule.section)},
          {"evidence_tables", std::move(tables)}};
}

std::string RuleKeys() {
  std::vector<std::string> keys;
  for (const analysis::FindingRule& r : analysis::FindingRules())
    keys.push_back(std::string(r.key.key()));
  return fmt::format("{}", fmt::join(keys, ", "));
}

StatusOr<Json> MetricOrTable(const report::Report& r, const std::string& what) {
  const report::Section* s = nullptr;
  if (const report::Table* t = FindTableById(r, what, &s)) {
    Json out = {{"kind", "table"},
                {"table", TableId(*s, *t)},
                {"title", t->title},
                {"section", s->title},
                {"columns", ColumnsJson(*t)},
                {"doc", analysis::DocOfSection(s->id)}};
    if (!t->notes.empty()) out["notes"] = t->notes;
    return out;
  }
  const size_t dot = what.find('.');
  if (dot != std::string::npos) {
    if (const report::Section* sec = r.FindSection(what.substr(0, dot))) {
      if (const report::Metric* m = sec->FindMetric(what.substr(dot + 1))) {
        Json out = MetricJson(*sec, *m);
        out["kind"] = "metric";
        out["section"] = sec->title;
        out["doc"] = analysis::DocOfSection(sec->id);
        return out;
      }
    }
  }
  return NotFound(fmt::format(
      "'{}' is no rule, finding, metric or table of this report: name a rule ({}), a finding "
      "(\"recommendations#1\"), a metric (\"overview.avg_step_time_s\") or a table "
      "(\"hta/idle_time_breakdown\") as analyze lists them",
      what, RuleKeys()));
}

StatusOr<Json> ExplainCall(const Json& args, ToolContext& ctx) {
  const std::string what = args["what"].get<std::string>();
  const analysis::FindingRule* rule = analysis::FindFindingRule(what);
  if (!args.contains("path")) {
    if (rule != nullptr) return RuleJson(*rule);
    return NotFound(
        fmt::format("'{}' is no rule ({}); for a finding, metric or table, give the run's path too",
                    what, RuleKeys()));
  }
  TRAINPROF_ASSIGN_OR_RETURN(auto run, ctx.cache->Get(args, ctx));
  const report::Report& r = run->report();
  const report::Section* s = nullptr;
  if (const report::Finding* f = FindFindingById(r, what, &s)) {
    Json out = FindingEvidence(r, *s, static_cast<size_t>(f - s->findings.data()), 10);
    out["kind"] = "finding";
    return out;
  }
  if (rule == nullptr) return MetricOrTable(r, what);
  Json out = RuleJson(*rule);
  Json found = Json::array();  // this run's findings of the rule, with their evidence
  for (const report::Section& sec : r.sections)
    for (size_t i = 0; i < sec.findings.size(); ++i)
      if (sec.findings[i].rule == what) found.push_back(FindingEvidence(r, sec, i, 10));
  out["findings"] = std::move(found);
  return out;
}

}  // namespace

Tool ExplainTool() {
  Json props = RunProperties();
  props["what"] = StringSchema(
      "a rule (\"dataloader\", \"host_wait\", ...), a finding id (\"recommendations#1\"), a "
      "metric id (\"overview.avg_step_time_s\") or a table id (\"hta/idle_time_breakdown\")");
  return {"explain", "What a finding, rule, metric or table means",
          "Explains a rule of the recommendations (its definition, threshold, evidence tables "
          "and doc section; no path needed), or, given a run's path, one of its findings (with "
          "the evidence rows), metrics (with the value) or tables (with the columns and units).",
          ObjectSchema(std::move(props), {"what"}), ExplainCall};
}

}  // namespace trainprof::mcp
