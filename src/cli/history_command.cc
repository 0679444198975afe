// Run history and comparison: `trainprof runs list|show` and `trainprof compare` with its
// regression gate; RecordRun() is how profile and analyze add a finished run to the history.
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>

#include "base/atomic_file.h"
#include "cli/commands.h"
#include "history/compare.h"
#include "history/run_db.h"
#include "history/run_lookup.h"
#include "report/format.h"
#include "report/html.h"
#include "report/json.h"
#include "report/json_reader.h"
#include "report/terminal.h"

namespace trainprof::cli {

using history::LoadComparison;
using history::LoadedComparison;
using history::LoadRun;
using history::OpenHistory;
namespace {

namespace fs = std::filesystem;
using history::RunDb;

std::string Short(const std::string& commit) { return commit.substr(0, 10); }

report::Report RunsTable(const std::vector<history::RunRecord>& runs, const std::string& path) {
  report::Report r;
  r.kind = "runs";
  r.title = fmt::format("Run history: {} ({} shown, newest first)", path, runs.size());
  report::Section& s = r.AddSection("runs", "Runs");
  std::vector<report::Column> cols = {{"id", "Id"},
                                      {"created_utc", "Created (UTC)"},
                                      {"kind", "Kind"},
                                      {.key = "name", .title = "Name", .terminal_width = 36},
                                      {"git_commit", "Commit"},
                                      {"git_branch", "Branch"}};
  for (const history::FigureInfo& f : history::kFigures)
    cols.push_back({f.key, f.short_title, f.unit});
  cols.push_back({"run_dir", "Folder", report::Unit::kText, false});
  cols.push_back({"config_hash", "Config", report::Unit::kText, false});
  report::Table& t = s.AddTable("runs", "Runs", std::move(cols));
  for (const history::RunRecord& run : runs) {
    std::vector<report::Value> row = {run.id,   run.created_utc,       run.kind,
                                      run.name, Short(run.git_commit), run.git_branch};
    for (double v : run.figures.values)
      row.push_back(std::isfinite(v) ? report::Value(v) : report::Value());
    row.push_back(run.run_dir);
    row.push_back(run.config_hash);
    t.rows.push_back(std::move(row));
  }
  if (runs.empty()) s.notes.push_back("No runs match.");
  return r;
}

struct ListFlags {
  std::string db;
  size_t last = 20;
  std::vector<std::string> where;
  std::string format = "text";
};

int RunsList(const ListFlags& f) {
  std::unique_ptr<RunDb> db;
  if (Status s = OpenHistory(f.db, db); !s.ok()) return PrintError(s), ExitFor(s);
  auto runs = db->List({.last = f.last, .where = f.where});
  if (!runs.ok()) return PrintError(runs.status()), ExitFor(runs.status());
  report::Report r = RunsTable(*runs, db->path());
  if (f.format == "json") {
    std::cout << report::RenderJsonString(r);
  } else {
    report::TerminalRenderer().Render(r, std::cout);
  }
  return kExitOk;
}

struct ShowFlags {
  std::string db, run;
  std::string format = "text";
};

int RunsShow(const ShowFlags& f) {
  std::unique_ptr<RunDb> db;
  auto run = LoadRun(f.run, f.db, db);
  if (!run.ok()) return PrintError(run.status()), ExitFor(run.status());
  if (f.format == "json") {
    std::cout << report::RenderJsonString(run->report);
    return kExitOk;
  }
  if (run->record) {
    fmt::print("run {}, recorded in {} (fields as --where names them):\n", run->record->id,
               db->path());
    for (const auto& [field, value] : history::RecordFields(*run->record))
      fmt::print("  {:<20} {}\n", field, value.empty() ? "-" : value);
  }
  fmt::print("folder {} (report.html opens in a browser)\n\n", run->dir);
  report::TerminalRenderer().Render(run->report, std::cout);
  return kExitOk;
}

struct AddFlags {
  std::vector<std::string> dirs;
  std::string db;
};

int RunsAdd(const AddFlags& f) {
  int code = kExitOk;
  for (const std::string& dir : f.dirs) {
    auto r = report::ReadReportJson((fs::path(dir) / "report.json").string());
    if (!r.ok()) {
      PrintError(r.status());
      code = kExitBadInput;
      continue;
    }
    if (int c = RecordRun(*r, dir, f.db, false); c != kExitOk) code = c;
  }
  return code;
}

struct CompareFlags {
  std::vector<std::string> runs;
  std::string baseline;
  std::vector<std::string> fail_if;
  std::string format = "text";
  std::string html;
  std::string db;
};

int PrintComparison(const CompareFlags& f, const history::Comparison& cmp, size_t bounds) {
  if (!f.html.empty()) {
    Status w = base::WriteFileAtomically(f.html, report::RenderHtmlString(cmp.report));
    if (!w.ok()) return PrintError(w), kExitNoOutput;
  }
  if (f.format == "json") {
    std::cout << report::RenderJsonString(cmp.report);
  } else if (f.format == "html") {
    std::cout << report::RenderHtmlString(cmp.report);
  } else {
    report::TerminalRenderer().Render(cmp.report, std::cout);
    if (!f.html.empty()) fmt::print("\nCompare page written to {}\n", f.html);
  }
  for (const std::string& w : cmp.warnings)
    fmt::print(stderr, "trainprof compare: warning: {}\n", w);
  for (const std::string& v : cmp.verdicts) fmt::print(stderr, "trainprof compare: {}\n", v);
  if (bounds > 0) {
    fmt::print(stderr, "trainprof compare: regression gate {}: {} of {} bounds crossed{}\n",
               cmp.gate_failed()             ? "FAILED"
               : cmp.bounds_inconclusive > 0 ? "undecided (exit 0 here; `trainprof gate` exits 3)"
                                             : "passed",
               cmp.bounds_crossed, bounds,
               cmp.bounds_inconclusive > 0
                   ? fmt::format(", {} inconclusive", cmp.bounds_inconclusive)
                   : "");
  }
  return cmp.gate_failed() ? kExitFailure : kExitOk;
}

int Compare(const CompareFlags& f) {
  std::vector<history::Bound> bounds;
  for (const std::string& text : f.fail_if) {
    auto b = history::ParseBound(text);
    if (!b.ok()) return PrintError(b.status()), kExitBadInput;
    bounds.push_back(std::move(*b));
  }
  std::unique_ptr<RunDb> db;
  auto loaded = LoadComparison(f.runs, f.baseline, f.db, db, "compare");
  if (!loaded.ok()) return PrintError(loaded.status()), ExitFor(loaded.status());
  auto cmp = history::BuildCompareReport(loaded->runs, bounds, loaded->options);
  if (!cmp.ok()) return PrintError(cmp.status()), kExitBadInput;
  return PrintComparison(f, *cmp, bounds.size());
}

}  // namespace

void AddDbOption(CLI::App* sub, std::string* db, bool records) {
  sub->add_option("--db", *db,
                  fmt::format("Run history {} (default: $TRAINPROF_DB, else runs/trainprof.db{})",
                              records ? "the run is recorded in" : "database",
                              records ? "; --db off: not recorded" : ""));
}

int RecordRun(const report::Report& r, const std::string& dir, const std::string& db_flag,
              bool quiet) {
  std::string path;
  auto rec = history::RecordRun(r, dir, db_flag, &path);
  // After the report on stdout, also when both streams go to one file.
  std::fflush(stdout);
  if (!rec.ok()) {
    // The default history (runs/trainprof.db below the working folder) was not asked for: a
    // read-only working folder is a warning, the run itself is written.
    const bool asked = !history::IsDefaultDbPath(db_flag);
    fmt::print(
        stderr, "trainprof: {}the run was not recorded in the run history: {}{}\n",
        asked ? "" : "warning: ", rec.status().message(),
        asked ? "" : " (--db or TRAINPROF_DB names a history elsewhere; --db off records none)");
    return asked ? kExitFailure : kExitOk;
  }
  if (!quiet && !rec->id.empty()) fmt::print(stderr, "Recorded as run {} in {}\n", rec->id, path);
  return kExitOk;
}

int RecordRunFolder(const std::string& dir, const std::string& db_flag, bool quiet) {
  auto r = report::ReadReportJson((fs::path(dir) / "report.json").string());
  if (!r.ok()) {
    fmt::print(stderr, "trainprof: the run was not recorded in the run history: {}\n",
               r.status().message());
    return kExitFailure;
  }
  return RecordRun(*r, dir, db_flag, quiet);
}

void AddHistoryCommands(CLI::App& app, std::function<int()>* run) {
  CLI::App* runs = app.add_subcommand(
      "runs", "The run history: every profile and analyze run, with its key figures");
  runs->require_subcommand(1);
  auto codes_for = [](const std::string& bad) {
    return ExitCodesHelp(
        {{kExitOk, "success"},
         {kExitFailure, "the run history could not be read (locked, I/O error)"},
         {kExitBadInput, "bad input: " + bad + ", a damaged or foreign database"}});
  };
  const std::string codes = codes_for("an unknown run, a bad --where");
  runs->footer(
      "Runs are named by id (or a unique start of one), by folder, or as latest / latest~N.\n"
      "  trainprof runs list|show|add|noise --help: their options\n" +
      codes);

  auto list = std::make_shared<ListFlags>();
  CLI::App* ls = runs->add_subcommand("list", "List stored runs, newest first");
  AddDbOption(ls, &list->db, false);
  ls->add_option("--last", list->last, "Newest N runs (0: all)")->default_val(20);
  ls->add_option("--where", list->where,
                 "FIELD OP VALUE (OP: = != < <= > >= ~), e.g. 'git_branch = main' (repeatable)");
  ls->add_option("--format", list->format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->default_val("text");
  ls->footer(fmt::format(
      "--where fields: {}\n(short names: commit, branch, created, version, dir)\nExamples:\n"
      "  trainprof runs list --last 5\n"
      "  trainprof runs list --where 'kind = profile' --where 'training_throughput > 500'\n{}",
      history::WhereFields(), codes));
  ls->callback([run, list] { *run = [list] { return RunsList(*list); }; });

  auto show = std::make_shared<ShowFlags>();
  CLI::App* sh = runs->add_subcommand("show", "One run: its record and its report");
  sh->add_option("run", show->run, "Id, folder, latest or latest~N")->required();
  AddDbOption(sh, &show->db, false);
  sh->add_option("--format", show->format, "text or json (its report.json)")
      ->check(CLI::IsMember({"text", "json"}))
      ->default_val("text");
  sh->footer(
      "Prints the run's record (the fields `runs list` filters on), then its report.\nExamples:\n"
      "  trainprof runs show latest\n  trainprof runs show latest~1 --format json | jq .meta\n" +
      codes_for("an unknown run"));
  sh->callback([run, show] { *run = [show] { return RunsShow(*show); }; });

  auto add = std::make_shared<AddFlags>();
  CLI::App* ad =
      runs->add_subcommand("add", "Record finished run folders (their report.json) in the history");
  ad->add_option("dirs", add->dirs, "Run folders")->required()->check(CLI::ExistingDirectory);
  AddDbOption(ad, &add->db, true);
  ad->footer(
      "For runs made with the history off or elsewhere (a CI job's artifact). Each is recorded "
      "as a new run, with this folder's git commit.\nExample:\n"
      "  trainprof runs add artifacts/runs/*/\n" +
      codes_for("a folder without a readable report.json"));
  ad->callback([run, add] { *run = [add] { return RunsAdd(*add); }; });
  AddRunsNoiseCommand(runs, run);

  auto f = std::make_shared<CompareFlags>();
  CLI::App* cmp = app.add_subcommand(
      "compare",
      "Runs side by side with absolute and % changes (the first is the baseline), and a "
      "regression gate for CI");
  cmp->add_option("runs", f->runs, "Runs: id, folder, latest or latest~N")->required();
  cmp->add_option("--baseline", f->baseline,
                  "The baseline run; `ancestor`: the newest stored run of the same kind made "
                  "from HEAD or an ancestor of it (git); `last:K`: the last K stored runs of the "
                  "candidate's kind and config hash, pooled");
  cmp->add_option("--fail-if", f->fail_if,
                  "FIGURE OP BOUND, e.g. 'training_throughput < -10%' or 'peak_memory > +1%': "
                  "exit 1 when the candidate's change from the baseline crosses it (repeatable)");
  cmp->add_option("--format", f->format, "text, json or html on stdout")
      ->check(CLI::IsMember({"text", "json", "html"}))
      ->default_val("text");
  cmp->add_option("--html", f->html, "Also write the compare page to this file");
  AddDbOption(cmp, &f->db, false);
  std::string figures;
  for (const history::FigureInfo& k : history::kFigures)
    figures += fmt::format("  {:<20} {}\n", k.key, k.source);
  cmp->footer(
      "Key figures (for --fail-if; any SECTION.METRIC of report.json works too):\n" + figures +
      "Step time and throughput are gated on the 95 % confidence interval of their median change "
      "when both runs kept per-step times: a bound fails only when the whole interval lies "
      "beyond it (verdict: beyond noise, within noise, or inconclusive (N steps)). Percentages "
      "change in percentage points: 'dataloader_share > +5pp'.\nExamples:\n"
      "  trainprof compare latest~1 latest\n"
      "  trainprof compare --baseline last:5 latest --fail-if 'step_time > +3%'\n"
      "  trainprof compare --baseline ancestor latest --fail-if 'training_throughput < -10%' "
      "--fail-if 'peak_memory > +1%'\nSee docs/ci.md.\n" +
      ExitCodesHelp({{kExitOk,
                      "compared; every bound held, or was inconclusive (`trainprof gate` tells "
                      "those apart for CI)"},
                     {kExitFailure,
                      "a bound was crossed (beyond noise, or plainly for figures "
                      "without per-step data)"},
                     {kExitBadInput,
                      "bad input: a malformed bound, an unknown figure or run, a "
                      "figure a run did not measure"},
                     {kExitNoOutput, "the --html page cannot be written"}}));
  cmp->callback([run, f] { *run = [f] { return Compare(*f); }; });
}

}  // namespace trainprof::cli
