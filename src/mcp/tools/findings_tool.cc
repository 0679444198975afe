// `findings`: every finding of a run with its evidence: the rule's definition and threshold, the
// doc section, and the rows of the tables that show its figure for the ranks it names.
#include "mcp/arguments.h"
#include "mcp/evidence.h"
#include "mcp/report_parts.h"
#include "mcp/run_cache.h"

namespace trainprof::mcp {

namespace {

int Rank(const std::string& severity) {
  return severity == "error" ? 2 : severity == "warning" ? 1 : 0;
}

StatusOr<Json> FindingsCall(const Json& args, ToolContext& ctx) {
  TRAINPROF_ASSIGN_OR_RETURN(auto run, ctx.cache->Get(args, ctx));
  const report::Report& r = run->report();
  const int least = Rank(args.value("severity", "info"));
  const int64_t limit = args.value("limit", int64_t{20});
  const int64_t rows = args.value("rows_per_table", int64_t{5});
  Json out = Json::array();
  int64_t total = 0;
  for (const report::Section& s : r.sections) {
    for (size_t i = 0; i < s.findings.size(); ++i) {
      if (Rank(report::SeverityName(s.findings[i].severity)) < least) continue;
      if (total++ < limit) out.push_back(FindingEvidence(r, s, i, rows));
    }
  }
  const size_t dropped = FitChars(out, ctx.limits.max_chars);
  Json result = {{"total", total}, {"returned", out.size()}, {"findings", std::move(out)}};
  if (total > static_cast<int64_t>(result["returned"].get<size_t>()))
    result["more"] = dropped > 0 ? "cut to fit the size limit: ask with fewer rows_per_table"
                                 : "ask again with a larger limit";
  return result;
}

}  // namespace

Tool FindingsTool() {
  Json props = RunProperties();
  props["severity"] =
      EnumSchema("the least severity to return (default info: all)", {"info", "warning", "error"});
  props["limit"] = IntegerSchema("findings to return (default 20)", 1, 200);
  props["rows_per_table"] = IntegerSchema("evidence rows per table (default 5)", 0, 50);
  return {"findings", "Findings with their evidence",
          "Returns a run's findings in the report's order (errors, then causes by the step "
          "time they could save, then symptoms), each with the rule that made it, its "
          "threshold, its definition, the doc section, and the evidence: rows of the tables "
          "that show its figure for the ranks it names (largest first), with events such as "
          "the longest GPU idle gaps.",
          ObjectSchema(std::move(props), {"path"}), FindingsCall};
}

}  // namespace trainprof::mcp
