// `diff`: what changed from one run's traces to another's, as `trainprof diff A B` reports it.
#include "analysis/run/driver.h"
#include "analysis/run/options.h"
#include "mcp/arguments.h"
#include "mcp/report_parts.h"
#include "mcp/run_cache.h"

namespace trainprof::mcp {

namespace {

// One side: its paths, resolved under the roots, and the request its options make.
struct Side {
  std::vector<std::string> paths;
  analysis::AnalyzeRequest req;
};

StatusOr<Side> SideOf(const Json& side, const Json& args, ToolContext& ctx) {
  Json one = {{"path", side}};
  for (const auto& [key, value] : args.items())
    if (analysis::FindAnalyzeOption(key) != nullptr) one[key] = value;
  Side s;
  TRAINPROF_ASSIGN_OR_RETURN(s.paths, RunArguments(one, ctx, s.req));
  return s;
}

StatusOr<analysis::RunInputs> InputsOf(const Side& s, const Json& label) {
  TRAINPROF_ASSIGN_OR_RETURN(
      analysis::RunInputs in,
      analysis::InputsOfOneRun(s.paths, "diff compares one run with another"));
  in.skip_unreadable = false;
  in.input = Line(label);
  return in;
}

// Two snapshots are compared as `trainprof diff a.pickle b.pickle` compares them; two runs'
// traces as `trainprof diff A B` (the driver's DiffRun, for both).
StatusOr<report::Report> DiffReport(const Json& args, ToolContext& ctx) {
  TRAINPROF_ASSIGN_OR_RETURN(Side a, SideOf(args["baseline"], args, ctx));
  TRAINPROF_ASSIGN_OR_RETURN(Side b, SideOf(args["candidate"], args, ctx));
  TRAINPROF_ASSIGN_OR_RETURN(analysis::RunInputs ia, InputsOf(a, args["baseline"]));
  TRAINPROF_ASSIGN_OR_RETURN(analysis::RunInputs ib, InputsOf(b, args["candidate"]));
  if (Status pair = analysis::CheckDiffPair(ia, ib); !pair.ok())
    return BadCall(std::string(pair.message()));
  analysis::RunHooks hooks;
  hooks.progress = ctx.progress;
  hooks.cancelled = ctx.cancelled;
  return analysis::DiffRun(ia, ib, b.req, hooks, hooks);
}

StatusOr<Json> DiffCall(const Json& args, ToolContext& ctx) {
  TRAINPROF_ASSIGN_OR_RETURN(report::Report r, DiffReport(args, ctx));
  return ReportDigest(r, args.value("rows_per_table", int64_t{10}), ctx.limits.max_chars);
}

Json DiffProperties() {
  Json props = {{"baseline", PathsSchema("run A: a trace, or a folder of one run's traces")},
                {"candidate", PathsSchema("run B, compared with A")},
                {"rows_per_table", IntegerSchema("rows of each table (default 10)", 0, 200)}};
  for (const analysis::AnalyzeOption& o : analysis::AnalyzeOptionList())
    if (o.diff) props[std::string(o.keyword)] = RunProperties()[std::string(o.keyword)];
  return props;
}

}  // namespace

Tool DiffTool() {
  return {"diff", "What changed between two runs",
          "Compares two runs' traces as `trainprof diff A B` does: step time and its breakdown, "
          "the operators and kernels that grew or shrank, the GPU work per device, with the "
          "first rows of each table; or two memory snapshots (.pickle): the peak and what is "
          "live at it, side by side.",
          ObjectSchema(DiffProperties(), {"baseline", "candidate"}), DiffCall};
}

}  // namespace trainprof::mcp
