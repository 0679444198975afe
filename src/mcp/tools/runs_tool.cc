// `runs`: the run history, as `trainprof runs list`, `runs show`, `compare` and `gate` give it.
// The history and every run folder it reads must lie under the roots.
#include <fmt/format.h>

#include "history/compare.h"
#include "history/run_db.h"
#include "history/run_lookup.h"
#include "mcp/arguments.h"
#include "mcp/report_parts.h"
#include "mcp/run_cache.h"

namespace trainprof::mcp {

namespace {

using history::RunDb;

StatusOr<std::string> HistoryPath(const Json& args, const ToolContext& ctx) {
  const std::string path = history::DbPath(args.value("db", ctx.db));
  if (path.empty()) return BadCall("the run history is off (--db off or TRAINPROF_DB=off)");
  return ctx.roots->Resolve(path);
}

Json RecordJson(const history::RunRecord& r) {
  Json j = Json::object();
  for (const auto& [field, value] : history::RecordFields(r)) j[field] = value;
  return j;
}

// The run folder of `rec`, refused unless it lies under the roots.
Status CheckRunDir(const history::RunRecord& rec, const ToolContext& ctx) {
  return ctx.roots->Resolve(rec.run_dir).status();
}

StatusOr<Json> List(const Json& args, const std::string& db_path) {
  TRAINPROF_ASSIGN_OR_RETURN(auto db, RunDb::Open(db_path, /*create=*/false));
  RunDb::Query q;
  q.last = static_cast<size_t>(args.value("last", int64_t{20}));
  if (args.contains("where")) q.where = args["where"].get<std::vector<std::string>>();
  TRAINPROF_ASSIGN_OR_RETURN(auto runs, db->List(q));
  Json rows = Json::array();
  for (const history::RunRecord& r : runs) rows.push_back(RecordJson(r));
  return Json{{"db", db_path}, {"runs", std::move(rows)}};
}

StatusOr<std::vector<std::string>> Names(const Json& args, size_t least) {
  std::vector<std::string> names;
  if (args.contains("runs")) names = args["runs"].get<std::vector<std::string>>();
  if (names.size() < least)
    return BadCall(
        fmt::format("runs: name at least {} run{} (an id, a prefix, latest, latest~N "
                    "or a run folder)",
                    least, least == 1 ? "" : "s"));
  return names;
}

// A run name given to compare or gate: a folder must lie under the roots, and so must a stored
// run's folder, before anything is read.
Status CheckName(const std::string& name, const std::string& db_path, const ToolContext& ctx) {
  StatusOr<std::string> as_path = ctx.roots->Resolve(name);
  if (as_path.ok() || IsBadCall(as_path.status())) return as_path.status();
  TRAINPROF_ASSIGN_OR_RETURN(auto db, RunDb::Open(db_path, false));
  TRAINPROF_ASSIGN_OR_RETURN(history::RunRecord rec, db->Find(name));
  return CheckRunDir(rec, ctx);
}

StatusOr<Json> Show(const Json& args, const std::string& db_path, const ToolContext& ctx) {
  TRAINPROF_ASSIGN_OR_RETURN(std::vector<std::string> names, Names(args, 1));
  TRAINPROF_ASSIGN_OR_RETURN(auto db, RunDb::Open(db_path, false));
  TRAINPROF_ASSIGN_OR_RETURN(history::RunRecord rec, db->Find(names[0]));
  TRAINPROF_RETURN_IF_ERROR(CheckRunDir(rec, ctx));
  return Json{{"run", RecordJson(rec)}};
}

StatusOr<Json> Compare(const Json& args, const std::string& db_path, const ToolContext& ctx,
                       bool gate) {
  TRAINPROF_ASSIGN_OR_RETURN(std::vector<std::string> names, Names(args, gate ? 1 : 2));
  const std::string baseline = args.value("baseline", "");
  if (gate && baseline.empty()) return BadCall("baseline: a gate needs a baseline run");
  for (const std::string& n : names) TRAINPROF_RETURN_IF_ERROR(CheckName(n, db_path, ctx));
  if (!baseline.empty()) TRAINPROF_RETURN_IF_ERROR(CheckName(baseline, db_path, ctx));
  std::vector<history::Bound> bounds;
  for (const std::string& text : args.value("fail_if", std::vector<std::string>{})) {
    auto b = history::ParseBound(text);
    if (!b.ok()) return BadCall(fmt::format("fail_if: {}", b.status().message()));
    bounds.push_back(std::move(*b));
  }
  std::unique_ptr<RunDb> db;
  TRAINPROF_ASSIGN_OR_RETURN(auto loaded, history::LoadComparison(names, baseline, db_path, db,
                                                                  gate ? "gate" : "compare"));
  TRAINPROF_ASSIGN_OR_RETURN(history::Comparison cmp,
                             history::BuildCompareReport(loaded.runs, bounds, loaded.options));
  Json out =
      ReportDigest(cmp.report, args.value("rows_per_table", int64_t{10}), ctx.limits.max_chars);
  out["bounds"] = cmp.verdicts;
  out["warnings"] = cmp.warnings;
  if (!bounds.empty()) {
    const bool undecided = cmp.bounds_inconclusive > 0 || cmp.bounds_without_interval > 0;
    out["verdict"] = cmp.gate_failed() ? "regression" : undecided ? "undecided" : "pass";
  }
  return out;
}

StatusOr<Json> RunsCall(const Json& args, ToolContext& ctx) {
  TRAINPROF_ASSIGN_OR_RETURN(std::string db_path, HistoryPath(args, ctx));
  const std::string action = args["action"].get<std::string>();
  if (action == "list") return List(args, db_path);
  if (action == "show") return Show(args, db_path, ctx);
  return Compare(args, db_path, ctx, action == "gate");
}

}  // namespace

Tool RunsTool() {
  Json props = {
      {"action", EnumSchema("list the history, show one run, compare runs, or gate a candidate "
                            "against a baseline",
                            {"list", "show", "compare", "gate"})},
      {"db", StringSchema("the run history (an SQLite file under the roots); default: the "
                          "server's --db, $TRAINPROF_DB, runs/trainprof.db")},
      {"last", IntegerSchema("list: the newest N runs (default 20; 0: all)", 0, 100000)},
      {"where", StringsSchema("list: conditions \"FIELD OP VALUE\", all must hold "
                              "(\"kind = analyze\")")},
      {"runs", StringsSchema("show, compare, gate: run names (an id, a prefix, latest, latest~N, "
                             "or a run folder); compare's last is the candidate")},
      {"baseline", StringSchema("compare, gate: the baseline run (default: the first of runs)")},
      {"fail_if", StringsSchema("compare, gate: bounds \"FIGURE OP BOUND\" "
                                "(\"step_time > +3%\")")},
      {"rows_per_table", IntegerSchema("compare, gate: rows of each table (default 10)", 0, 200)},
  };
  return {"runs", "The run history",
          "Lists the runs trainprof recorded (profile and analyze runs with their key figures), "
          "shows one, compares runs (the change beyond run-to-run noise, every figure) or gates "
          "a candidate against a baseline with bounds (verdict pass, regression or undecided).",
          ObjectSchema(std::move(props), {"action"}), RunsCall};
}

}  // namespace trainprof::mcp
