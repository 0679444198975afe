// Run history and comparison: `trainprof runs list|show` and `trainprof compare` with its
// regression gate; RecordRun() is how profile and analyze add a finished run to the history.
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>

#include "base/atomic_file.h"
#include "base/text.h"
#include "cli/commands.h"
#include "history/compare.h"
#include "history/run_db.h"
#include "report/format.h"
#include "report/html.h"
#include "report/json.h"
#include "report/json_reader.h"
#include "report/terminal.h"

namespace trainprof::cli {
namespace {

namespace fs = std::filesystem;
using history::RunDb;

void PrintError(const Status& s) { fmt::print(stderr, "trainprof: {}\n", s.message()); }

int ExitFor(const Status& s) {
  return s.code() == StatusCode::kUnavailable ? kExitFailure : kExitBadInput;
}

// Opens the existing run history into `db`, unless it is open already.
Status OpenHistory(const std::string& flag, std::unique_ptr<RunDb>& db) {
  if (db) return Status::Ok();
  const std::string path = history::DbPath(flag);
  if (path.empty()) return InvalidArgument("the run history is off (--db off or TRAINPROF_DB=off)");
  TRAINPROF_ASSIGN_OR_RETURN(db, RunDb::Open(path, /*create=*/false));
  return Status::Ok();
}

// A run named on the command line: a run folder (or its report.json), else an id, an id prefix,
// latest or latest~N in the history. The history is opened only when needed.
StatusOr<history::LoadedRun> LoadRun(const std::string& name, const std::string& db_flag,
                                     std::unique_ptr<RunDb>& db) {
  history::LoadedRun run;
  run.given = name;
  std::error_code ec;
  if (fs::is_directory(name, ec)) {
    run.dir = name;
  } else if (fs::is_regular_file(name, ec) && name.ends_with("report.json")) {
    run.dir = fs::path(name).parent_path().string();
    if (run.dir.empty()) run.dir = ".";
  } else {
    if (Status opened = OpenHistory(db_flag, db); !opened.ok()) {
      return Status(opened.code(),
                    fmt::format("{}: no run folder of that name, and {}", name, opened.message()));
    }
    TRAINPROF_ASSIGN_OR_RETURN(history::RunRecord rec, db->Find(name));
    run.dir = rec.run_dir;
    run.record = std::move(rec);
  }
  const std::string file = (fs::path(run.dir) / "report.json").string();
  auto report = report::ReadReportJson(file);
  if (!report.ok()) {
    if (report.status().code() == StatusCode::kNotFound) {
      return NotFound(
          fmt::format("{}: the run folder {} has no report.json (not a trainprof run "
                      "folder, or the run did not finish)",
                      name, run.dir));
    }
    return report.status();
  }
  run.report = std::move(*report);
  return run;
}

std::string Short(const std::string& commit) { return commit.substr(0, 10); }

report::Report RunsTable(const std::vector<history::RunRecord>& runs, const std::string& path) {
  report::Report r;
  r.kind = "runs";
  r.title = fmt::format("Run history: {} ({} shown, newest first)", path, runs.size());
  report::Section& s = r.AddSection("runs", "Runs");
  std::vector<report::Column> cols = {
      {"id", "Id"},     {"created_utc", "Created (UTC)"}, {"kind", "Kind"},
      {"name", "Name"}, {"git_commit", "Commit"},         {"git_branch", "Branch"}};
  for (const history::FigureInfo& f : history::kFigures)
    cols.push_back({f.key, f.short_title, f.unit});
  cols.push_back({"run_dir", "Folder", report::Unit::kText, false});
  report::Table& t = s.AddTable("runs", "Runs", std::move(cols));
  for (const history::RunRecord& run : runs) {
    std::vector<report::Value> row = {run.id,
                                      run.created_utc,
                                      run.kind,
                                      base::Ellipsize(run.name, 28),
                                      Short(run.git_commit),
                                      run.git_branch};
    for (double v : run.figures.values)
      row.push_back(std::isfinite(v) ? report::Value(v) : report::Value());
    row.push_back(run.run_dir);
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
    const history::RunRecord& r = *run->record;
    fmt::print("run {} ({}, {}), recorded in {}\n", r.id, r.kind, r.created_utc, db->path());
    if (!r.git_commit.empty())
      fmt::print("git commit {} on {}\n", r.git_commit,
                 r.git_branch.empty() ? "(detached)" : r.git_branch);
    fmt::print("config hash {}, trainprof {}, host {}\n", r.config_hash, r.trainprof_version,
               r.host);
  }
  fmt::print("folder {} (report.html opens in a browser)\n\n", run->dir);
  report::TerminalRenderer().Render(run->report, std::cout);
  return kExitOk;
}

struct CompareFlags {
  std::vector<std::string> runs;
  std::string baseline;
  std::vector<std::string> fail_if;
  std::string format = "text";
  std::string html;
  std::string db;
};

int Compare(const CompareFlags& f) {
  std::vector<history::Bound> bounds;
  for (const std::string& text : f.fail_if) {
    auto b = history::ParseBound(text);
    if (!b.ok()) return PrintError(b.status()), kExitBadInput;
    bounds.push_back(std::move(*b));
  }
  if (f.baseline.empty() && f.runs.size() < 2) {
    PrintError(InvalidArgument("compare needs two runs (or --baseline REF and a candidate)"));
    return kExitBadInput;
  }
  std::unique_ptr<RunDb> db;
  std::vector<history::LoadedRun> runs;
  for (const std::string& name : f.runs) {
    auto run = LoadRun(name, f.db, db);
    if (!run.ok()) return PrintError(run.status()), ExitFor(run.status());
    runs.push_back(std::move(*run));
  }
  if (!f.baseline.empty()) {
    StatusOr<history::LoadedRun> base = InvalidArgument("");
    if (f.baseline == "ancestor") {
      // anemoi's rule: the newest stored run made from an ancestor of HEAD (or HEAD itself).
      if (Status s = OpenHistory(f.db, db); !s.ok()) return PrintError(s), ExitFor(s);
      auto commits = history::AncestorCommits("", 100000);
      if (!commits.ok()) return PrintError(commits.status()), kExitBadInput;
      const history::LoadedRun& cand = runs.back();
      auto found =
          db->NewestAtCommits(*commits, cand.report.kind, cand.record ? cand.record->id : "");
      if (!found.ok()) return PrintError(found.status()), ExitFor(found.status());
      if (!*found) {
        PrintError(NotFound(fmt::format(
            "--baseline ancestor: no {} run in {} was made from HEAD or an ancestor of it",
            cand.report.kind, db->path())));
        return kExitBadInput;
      }
      base = LoadRun((*found)->id, f.db, db);
      if (base.ok()) base->given = "ancestor";
    } else {
      base = LoadRun(f.baseline, f.db, db);
    }
    if (!base.ok()) return PrintError(base.status()), ExitFor(base.status());
    runs.insert(runs.begin(), std::move(*base));
  }
  auto cmp = history::BuildCompareReport(runs, bounds);
  if (!cmp.ok()) return PrintError(cmp.status()), kExitBadInput;
  if (!f.html.empty()) {
    Status w = base::WriteFileAtomically(f.html, report::RenderHtmlString(cmp->report));
    if (!w.ok()) return PrintError(w), kExitNoOutput;
  }
  if (f.format == "json") {
    std::cout << report::RenderJsonString(cmp->report);
  } else if (f.format == "html") {
    std::cout << report::RenderHtmlString(cmp->report);
  } else {
    report::TerminalRenderer().Render(cmp->report, std::cout);
    if (!f.html.empty()) fmt::print("\nCompare page written to {}\n", f.html);
  }
  if (!bounds.empty()) {
    fmt::print(stderr, "trainprof compare: regression gate {}: {} of {} bounds crossed\n",
               cmp->gate_failed() ? "FAILED" : "passed", cmp->bounds_crossed, bounds.size());
  }
  return cmp->gate_failed() ? kExitFailure : kExitOk;
}

}  // namespace

void AddDbOption(CLI::App* sub, std::string* db, bool records) {
  sub->add_option(
      "--db", *db,
      fmt::format("Run history {} (default: $TRAINPROF_DB, else runs/trainprof.db{})",
                  records ? "the run is recorded in" : "database", records ? "; off: none" : ""));
}

int RecordRun(const report::Report& r, const std::string& dir, const std::string& db_flag,
              bool quiet) {
  std::string path;
  auto rec = history::RecordRun(r, dir, db_flag, &path);
  if (!rec.ok()) {
    fmt::print(stderr, "trainprof: the run was not recorded in the run history: {}\n",
               rec.status().message());
    return kExitFailure;
  }
  if (!quiet && !rec->id.empty()) fmt::print(stderr, "Recorded as run {} in {}\n", rec->id, path);
  return kExitOk;
}

int RecordRunFolder(const std::string& dir, const std::string& db_flag) {
  auto r = report::ReadReportJson((fs::path(dir) / "report.json").string());
  if (!r.ok()) {
    fmt::print(stderr, "trainprof: the run was not recorded in the run history: {}\n",
               r.status().message());
    return kExitFailure;
  }
  return RecordRun(*r, dir, db_flag, false);
}

void AddHistoryCommands(CLI::App& app, std::function<int()>* run) {
  CLI::App* runs = app.add_subcommand(
      "runs", "The run history: every profile and analyze run, with its key figures");
  runs->require_subcommand(1);
  runs->footer(fmt::format(
      "Runs are named by id (or a unique start of one), by folder, or as latest / latest~N.\n"
      "--where fields: {}\nExamples:\n"
      "  trainprof runs list --last 5\n"
      "  trainprof runs list --where 'kind = profile' --where 'training_throughput > 500'\n"
      "  trainprof runs show latest",
      history::WhereFields()));

  auto list = std::make_shared<ListFlags>();
  CLI::App* ls = runs->add_subcommand("list", "List stored runs, newest first");
  AddDbOption(ls, &list->db, false);
  ls->add_option("--last", list->last, "Newest N runs (0: all)")->default_val(20);
  ls->add_option("--where", list->where,
                 "FIELD OP VALUE (OP: = != < <= > >= ~), e.g. 'git_branch = main' (repeatable)");
  ls->add_option("--format", list->format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->default_val("text");
  ls->callback([run, list] { *run = [list] { return RunsList(*list); }; });

  auto show = std::make_shared<ShowFlags>();
  CLI::App* sh = runs->add_subcommand("show", "One run: its record and its report");
  sh->add_option("run", show->run, "Id, folder, latest or latest~N")->required();
  AddDbOption(sh, &show->db, false);
  sh->add_option("--format", show->format, "text or json (its report.json)")
      ->check(CLI::IsMember({"text", "json"}))
      ->default_val("text");
  sh->callback([run, show] { *run = [show] { return RunsShow(*show); }; });

  auto f = std::make_shared<CompareFlags>();
  CLI::App* cmp = app.add_subcommand(
      "compare",
      "Runs side by side with absolute and % changes (the first is the baseline), and a "
      "regression gate for CI");
  cmp->add_option("runs", f->runs, "Runs: id, folder, latest or latest~N")->required();
  cmp->add_option("--baseline", f->baseline,
                  "The baseline run; `ancestor`: the newest stored run of the same kind made "
                  "from HEAD or an ancestor of it (git)");
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
      "Exit codes: 0 compared (gate passed), 1 a bound was crossed, 2 bad input.\nExamples:\n"
      "  trainprof compare latest~1 latest\n"
      "  trainprof compare --baseline ancestor latest --fail-if 'training_throughput < -10%' "
      "--fail-if 'peak_memory > +1%'\nSee docs/ci.md.");
  cmp->callback([run, f] { *run = [f] { return Compare(*f); }; });
}

}  // namespace trainprof::cli
