// Run history and comparison: `trainprof runs list|show` and `trainprof compare` with its
// regression gate; RecordRun() is how profile and analyze add a finished run to the history.
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>

#include "base/atomic_file.h"
#include "base/parallel.h"
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
// Finds a run named on the command line (see LoadRun) without reading its report.
StatusOr<history::LoadedRun> FindRun(const std::string& name, const std::string& db_flag,
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
  return run;
}

// Reads the report.json of every run, in parallel (a 10,000-step run's report takes tens of
// milliseconds to parse). Errors: the first run's whose report cannot be read.
Status ReadReports(const std::vector<history::LoadedRun*>& runs) {
  std::vector<Status> status(runs.size(), Status::Ok());
  base::ParallelFor(runs.size(), 0, [&](size_t i) {
    history::LoadedRun& run = *runs[i];
    auto report = report::ReadReportJson((fs::path(run.dir) / "report.json").string());
    if (report.ok()) {
      run.report = std::move(*report);
    } else if (report.status().code() == StatusCode::kNotFound) {
      status[i] =
          NotFound(fmt::format("{}: the run folder {} has no report.json (not a trainprof run "
                               "folder, or the run did not finish)",
                               run.given, run.dir));
    } else {
      status[i] = report.status();
    }
  });
  for (Status& s : status) TRAINPROF_RETURN_IF_ERROR(s);
  return Status::Ok();
}

// A run named on the command line: a run folder (or its report.json), else an id, an id prefix,
// latest or latest~N in the history, with its report. The history is opened only when needed.
StatusOr<history::LoadedRun> LoadRun(const std::string& name, const std::string& db_flag,
                                     std::unique_ptr<RunDb>& db) {
  TRAINPROF_ASSIGN_OR_RETURN(history::LoadedRun run, FindRun(name, db_flag, db));
  TRAINPROF_RETURN_IF_ERROR(ReadReports({&run}));
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
  cols.push_back({"config_hash", "Config", report::Unit::kText, false});
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

struct CompareFlags {
  std::vector<std::string> runs;
  std::string baseline;
  std::vector<std::string> fail_if;
  std::string format = "text";
  std::string html;
  std::string db;
};

// --baseline last:K: the number K, or an error.
StatusOr<int64_t> ParseLastK(const std::string& spec) {
  const std::string k = spec.substr(5);
  char* end = nullptr;
  const long long v = std::strtoll(k.c_str(), &end, 10);
  if (k.empty() || *end != '\0' || v < 1 || v > 1000) {
    return InvalidArgument(fmt::format(
        "--baseline {}: last:K takes a whole number of runs from 1 to 1000, e.g. last:5", spec));
  }
  return static_cast<int64_t>(v);
}

// anemoi's rule: the newest stored run made from an ancestor of HEAD (or HEAD itself).
StatusOr<history::LoadedRun> AncestorBaseline(const history::LoadedRun& cand,
                                              const std::string& db_flag,
                                              std::unique_ptr<RunDb>& db) {
  TRAINPROF_RETURN_IF_ERROR(OpenHistory(db_flag, db));
  auto commits = history::AncestorCommits("", 100000);
  if (!commits.ok()) return InvalidArgument(std::string(commits.status().message()));
  TRAINPROF_ASSIGN_OR_RETURN(auto found, db->NewestAtCommits(*commits, cand.report.kind,
                                                             cand.record ? cand.record->id : ""));
  if (!found) {
    return NotFound(
        fmt::format("--baseline ancestor: no {} run in {} was made from HEAD or an ancestor of it",
                    cand.report.kind, db->path()));
  }
  TRAINPROF_ASSIGN_OR_RETURN(history::LoadedRun base, LoadRun(found->id, db_flag, db));
  base.given = "ancestor";
  return base;
}

bool SameRun(const history::RunRecord& rec, const history::LoadedRun& run) {
  return (run.record && run.record->id == rec.id) ||
         fs::weakly_canonical(rec.run_dir) == fs::weakly_canonical(run.dir);
}

// The last K runs of the candidate's kind and config hash, other than the candidate: the newest
// is the baseline, the others are pooled with it.
StatusOr<history::LoadedRun> LastKBaseline(const std::string& spec, const history::LoadedRun& cand,
                                           const std::string& db_flag, std::unique_ptr<RunDb>& db) {
  TRAINPROF_ASSIGN_OR_RETURN(const int64_t k, ParseLastK(spec));
  TRAINPROF_RETURN_IF_ERROR(OpenHistory(db_flag, db));
  const std::string hash = history::ConfigHash(cand.report);
  TRAINPROF_ASSIGN_OR_RETURN(
      auto rows, db->List({.last = static_cast<size_t>(k + 1),
                           .where = {"config_hash = " + hash, "kind = " + cand.report.kind}}));
  std::erase_if(rows, [&](const history::RunRecord& r) { return SameRun(r, cand); });
  if (rows.size() > static_cast<size_t>(k)) rows.resize(static_cast<size_t>(k));
  if (rows.empty()) {
    return NotFound(fmt::format("--baseline {}: no other {} run of config {} in {}", spec,
                                cand.report.kind, hash, db->path()));
  }
  if (rows.size() < static_cast<size_t>(k)) {
    fmt::print(stderr, "trainprof compare: --baseline {}: only {} earlier run{} of config {}\n",
               spec, rows.size(), rows.size() == 1 ? "" : "s", hash);
  }
  TRAINPROF_ASSIGN_OR_RETURN(history::LoadedRun base, FindRun(rows[0].id, db_flag, db));
  base.given = spec;
  for (size_t i = 1; i < rows.size(); ++i) {
    TRAINPROF_ASSIGN_OR_RETURN(history::LoadedRun more, FindRun(rows[i].id, db_flag, db));
    base.pooled.push_back(std::move(more));
  }
  std::vector<history::LoadedRun*> all = {&base};
  for (history::LoadedRun& p : base.pooled) all.push_back(&p);
  TRAINPROF_RETURN_IF_ERROR(ReadReports(all));
  return base;
}

StatusOr<history::LoadedRun> ResolveBaseline(const std::string& spec,
                                             const history::LoadedRun& cand,
                                             const std::string& db_flag,
                                             std::unique_ptr<RunDb>& db) {
  if (spec == "ancestor") return AncestorBaseline(cand, db_flag, db);
  if (spec.starts_with("last:")) return LastKBaseline(spec, cand, db_flag, db);
  return LoadRun(spec, db_flag, db);
}

// The run-to-run spread of the baseline's code and config: the standard deviation of the log
// median step times of the stored runs with its config hash, kind and commit (at least 3).
history::RunSpread HistorySpread(const history::LoadedRun& base, RunDb* db) {
  history::RunSpread out;
  if (db == nullptr || !base.record || base.record->git_commit.empty()) return out;
  const history::RunRecord& rec = *base.record;
  auto rows = db->List({.last = 50,
                        .where = {"config_hash = " + rec.config_hash, "kind = " + rec.kind,
                                  "git_commit = " + rec.git_commit}});
  if (!rows.ok()) return out;
  // Medians, as the interval's shift is: a run's mean moves with its slowest steps.
  std::vector<double> logs;
  for (const history::RunRecord& r : *rows) {
    const double v = r.figures.Get("step_time_median");
    if (v > 0 && std::isfinite(v)) logs.push_back(std::log(v));
  }
  if (logs.size() < 3) return out;
  double mean = 0, ss = 0;
  for (double v : logs) mean += v;
  mean /= static_cast<double>(logs.size());
  for (double v : logs) ss += (v - mean) * (v - mean);
  out.df = static_cast<int64_t>(logs.size()) - 1;
  out.sd = std::sqrt(ss / static_cast<double>(out.df));
  out.source = fmt::format("history: {} runs of config {} at {}", logs.size(),
                           rec.config_hash.substr(0, 8), rec.git_commit.substr(0, 10));
  return out;
}

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
               cmp.gate_failed() ? "FAILED" : "passed", cmp.bounds_crossed, bounds,
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
  if (f.baseline.empty() && f.runs.size() < 2) {
    PrintError(InvalidArgument("compare needs two runs (or --baseline REF and a candidate)"));
    return kExitBadInput;
  }
  std::unique_ptr<RunDb> db;
  std::vector<history::LoadedRun> runs;
  // A baseline by name is found with the others, so that every report is read at once.
  const bool derived = f.baseline == "ancestor" || f.baseline.starts_with("last:");
  std::vector<std::string> names = f.runs;
  if (!f.baseline.empty() && !derived) names.insert(names.begin(), f.baseline);
  for (const std::string& name : names) {
    auto run = FindRun(name, f.db, db);
    if (!run.ok()) return PrintError(run.status()), ExitFor(run.status());
    runs.push_back(std::move(*run));
  }
  std::vector<history::LoadedRun*> all;
  for (history::LoadedRun& run : runs) all.push_back(&run);
  if (Status s = ReadReports(all); !s.ok()) return PrintError(s), ExitFor(s);
  if (derived) {
    auto base = ResolveBaseline(f.baseline, runs.back(), f.db, db);
    if (!base.ok()) return PrintError(base.status()), ExitFor(base.status());
    runs.insert(runs.begin(), std::move(*base));
  }
  history::CompareOptions options;
  options.history_spread = HistorySpread(runs.front(), db.get());
  auto cmp = history::BuildCompareReport(runs, bounds, options);
  if (!cmp.ok()) return PrintError(cmp.status()), kExitBadInput;
  return PrintComparison(f, *cmp, bounds.size());
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
  auto codes_for = [](const std::string& bad) {
    return ExitCodesHelp(
        {{kExitOk, "success"},
         {kExitFailure, "the run history could not be read (locked, I/O error)"},
         {kExitBadInput, "bad input: " + bad + ", a damaged or foreign database"}});
  };
  const std::string codes = codes_for("an unknown run, a bad --where");
  runs->footer(
      "Runs are named by id (or a unique start of one), by folder, or as latest / latest~N.\n"
      "  trainprof runs list --help, trainprof runs show --help: their options\n" +
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
      ExitCodesHelp({{kExitOk, "compared; every bound held, or was inconclusive"},
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
