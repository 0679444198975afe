#include "history/run_lookup.h"

#include <fmt/format.h>

#include <filesystem>

#include "base/parallel.h"
#include "history/git.h"
#include "history/run_spread.h"
#include "report/json_reader.h"

namespace trainprof::history {

namespace fs = std::filesystem;

Status OpenHistory(const std::string& flag, std::unique_ptr<RunDb>& db) {
  if (db) return Status::Ok();
  const std::string path = DbPath(flag);
  if (path.empty()) return InvalidArgument("the run history is off (--db off or TRAINPROF_DB=off)");
  TRAINPROF_ASSIGN_OR_RETURN(db, RunDb::Open(path, /*create=*/false));
  return Status::Ok();
}

// Finds a run named on the command line (see LoadRun) without reading its report.
namespace {

StatusOr<LoadedRun> FindRun(const std::string& name, const std::string& db_flag,
                            std::unique_ptr<RunDb>& db) {
  LoadedRun run;
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
    TRAINPROF_ASSIGN_OR_RETURN(RunRecord rec, db->Find(name));
    run.dir = rec.run_dir;
    run.record = std::move(rec);
  }
  return run;
}

// Reads the report.json of every run, in parallel (a 10,000-step run's report takes tens of
// milliseconds to parse). Errors: the first run's whose report cannot be read.
Status ReadReports(const std::vector<LoadedRun*>& runs) {
  std::vector<Status> status(runs.size(), Status::Ok());
  base::ParallelFor(runs.size(), 0, [&](size_t i) {
    LoadedRun& run = *runs[i];
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

}  // namespace

StatusOr<LoadedRun> LoadRun(const std::string& name, const std::string& db_flag,
                            std::unique_ptr<RunDb>& db) {
  TRAINPROF_ASSIGN_OR_RETURN(LoadedRun run, FindRun(name, db_flag, db));
  TRAINPROF_RETURN_IF_ERROR(ReadReports({&run}));
  return run;
}

namespace {

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
StatusOr<LoadedRun> AncestorBaseline(const LoadedRun& cand, const std::string& db_flag,
                                     std::unique_ptr<RunDb>& db, bool* none_yet) {
  TRAINPROF_RETURN_IF_ERROR(OpenHistory(db_flag, db));
  auto commits = AncestorCommits("", 100000);
  if (!commits.ok()) return InvalidArgument(std::string(commits.status().message()));
  TRAINPROF_ASSIGN_OR_RETURN(auto found, db->NewestAtCommits(*commits, cand.report.kind,
                                                             cand.record ? cand.record->id : ""));
  if (!found) {
    *none_yet = true;
    return NotFound(fmt::format(
        "--baseline ancestor: no run of kind {} in {} was made from HEAD or an ancestor of it",
        cand.report.kind, db->path()));
  }
  TRAINPROF_ASSIGN_OR_RETURN(LoadedRun base, LoadRun(found->id, db_flag, db));
  base.given = "ancestor";
  return base;
}

bool SameRun(const RunRecord& rec, const LoadedRun& run) {
  return (run.record && run.record->id == rec.id) ||
         fs::weakly_canonical(rec.run_dir) == fs::weakly_canonical(run.dir);
}

// The last K runs of the candidate's kind and config hash, other than the candidate: the newest
// is the baseline, the others are pooled with it.
StatusOr<LoadedRun> LastKBaseline(const std::string& spec, const LoadedRun& cand,
                                  const std::string& db_flag, std::unique_ptr<RunDb>& db,
                                  std::string_view command, bool* none_yet) {
  TRAINPROF_ASSIGN_OR_RETURN(const int64_t k, ParseLastK(spec));
  TRAINPROF_RETURN_IF_ERROR(OpenHistory(db_flag, db));
  const std::string hash = ConfigHash(cand.report);
  TRAINPROF_ASSIGN_OR_RETURN(
      auto rows, db->List({.last = static_cast<size_t>(k + 1),
                           .where = {"config_hash = " + hash, "kind = " + cand.report.kind}}));
  std::erase_if(rows, [&](const RunRecord& r) { return SameRun(r, cand); });
  if (rows.size() > static_cast<size_t>(k)) rows.resize(static_cast<size_t>(k));
  if (rows.empty()) {
    *none_yet = true;
    return NotFound(fmt::format("--baseline {}: no other run of kind {} and config {} in {}", spec,
                                cand.report.kind, hash, db->path()));
  }
  if (rows.size() < static_cast<size_t>(k)) {
    fmt::print(stderr, "trainprof {}: --baseline {}: only {} earlier run{} of config {}\n", command,
               spec, rows.size(), rows.size() == 1 ? "" : "s", hash);
  }
  TRAINPROF_ASSIGN_OR_RETURN(LoadedRun base, FindRun(rows[0].id, db_flag, db));
  base.given = spec;
  for (size_t i = 1; i < rows.size(); ++i) {
    TRAINPROF_ASSIGN_OR_RETURN(LoadedRun more, FindRun(rows[i].id, db_flag, db));
    base.pooled.push_back(std::move(more));
  }
  std::vector<LoadedRun*> all = {&base};
  for (LoadedRun& p : base.pooled) all.push_back(&p);
  TRAINPROF_RETURN_IF_ERROR(ReadReports(all));
  return base;
}

StatusOr<LoadedRun> ResolveBaseline(const std::string& spec, const LoadedRun& cand,
                                    const std::string& db_flag, std::unique_ptr<RunDb>& db,
                                    std::string_view command, bool* none_yet) {
  if (spec == "ancestor") return AncestorBaseline(cand, db_flag, db, none_yet);
  if (spec.starts_with("last:")) return LastKBaseline(spec, cand, db_flag, db, command, none_yet);
  return LoadRun(spec, db_flag, db);
}

}  // namespace

StatusOr<LoadedComparison> LoadComparison(const std::vector<std::string>& names_given,
                                          const std::string& baseline, const std::string& db_flag,
                                          std::unique_ptr<RunDb>& db, std::string_view command,
                                          bool* no_baseline_yet) {
  if (baseline.empty() && names_given.size() < 2)
    return InvalidArgument(
        fmt::format("{} needs two runs (or --baseline REF and a candidate)", command));
  if (names_given.empty()) return InvalidArgument("no candidate run named");
  LoadedComparison out;
  // A baseline by name is found with the others, so that every report is read at once.
  const bool derived = baseline == "ancestor" || baseline.starts_with("last:");
  std::vector<std::string> names = names_given;
  if (!baseline.empty() && !derived) names.insert(names.begin(), baseline);
  for (const std::string& name : names) {
    TRAINPROF_ASSIGN_OR_RETURN(LoadedRun run, FindRun(name, db_flag, db));
    out.runs.push_back(std::move(run));
  }
  std::vector<LoadedRun*> all;
  for (LoadedRun& run : out.runs) all.push_back(&run);
  TRAINPROF_RETURN_IF_ERROR(ReadReports(all));
  if (derived) {
    bool none_yet = false;
    auto base = ResolveBaseline(baseline, out.runs.back(), db_flag, db, command, &none_yet);
    if (!base.ok()) {
      if (no_baseline_yet != nullptr) *no_baseline_yet = none_yet;
      return base.status();
    }
    out.runs.insert(out.runs.begin(), std::move(*base));
  }
  if (db || OpenHistory(db_flag, db).ok()) {
    const LoadedRun& base = out.runs.front();
    std::error_code ec;
    const fs::path cand = fs::weakly_canonical(fs::absolute(out.runs.back().dir, ec), ec);
    out.options.history_spread =
        HistorySpread(*db, base.report, base.record ? base.record->git_commit : "",
                      ec ? out.runs.back().dir : cand.lexically_normal().string());
  }
  return out;
}

}  // namespace trainprof::history
