// `diff`: what changed from one run's traces to another's, as `trainprof diff A B` reports it.
#include "analysis/diff.h"
#include "analysis/run/options.h"
#include "mcp/arguments.h"
#include "mcp/report_parts.h"
#include "mcp/run_cache.h"

namespace trainprof::mcp {

namespace {

StatusOr<analysis::LoadedRun> LoadSide(const Json& side, const Json& args, ToolContext& ctx,
                                       int* top) {
  Json one = {{"path", side}};
  for (const auto& [key, value] : args.items())
    if (analysis::FindAnalyzeOption(key) != nullptr) one[key] = value;
  analysis::AnalyzeRequest req;
  TRAINPROF_ASSIGN_OR_RETURN(std::vector<std::string> paths, RunArguments(one, ctx, req));
  TRAINPROF_ASSIGN_OR_RETURN(analysis::RunInputs in,
                             analysis::InputsOfOneRun(paths, "diff compares one run with another"));
  in.skip_unreadable = false;
  *top = req.top_kernels;
  analysis::RunHooks hooks;
  hooks.progress = ctx.progress;
  hooks.cancelled = ctx.cancelled;
  return analysis::LoadRun(in, req, hooks);
}

StatusOr<Json> DiffCall(const Json& args, ToolContext& ctx) {
  int top = 10;
  TRAINPROF_ASSIGN_OR_RETURN(analysis::LoadedRun a, LoadSide(args["baseline"], args, ctx, &top));
  TRAINPROF_ASSIGN_OR_RETURN(analysis::LoadedRun b, LoadSide(args["candidate"], args, ctx, &top));
  const std::string la = Line(args["baseline"]), lb = Line(args["candidate"]);
  report::Report r =
      analysis::BuildDiffReport({la, &a.models, &a.analyses}, {lb, &b.models, &b.analyses}, top);
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
          "first rows of each table.",
          ObjectSchema(DiffProperties(), {"baseline", "candidate"}), DiffCall};
}

}  // namespace trainprof::mcp
