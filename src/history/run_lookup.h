// Runs named on the command line of `runs`, `compare` and `gate`: found in the run history or as
// run folders, with their reports, the baseline forms (`ancestor`, `last:K`) and the history's
// run-to-run spread for the comparison.
//
//   std::unique_ptr<RunDb> db;
//   auto loaded = LoadComparison({"latest"}, "last:5", "", db, "gate");
//   if (!loaded.ok()) return loaded.status();
//   auto cmp = BuildCompareReport(loaded->runs, bounds, loaded->options);
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "history/compare.h"
#include "history/run_db.h"
#include "trainprof/status.h"

namespace trainprof::history {

// Opens the existing run history (--db flag, $TRAINPROF_DB, runs/trainprof.db) into `db`, unless
// it is open already. Errors: the history is off, missing, or not trainprof's.
Status OpenHistory(const std::string& flag, std::unique_ptr<RunDb>& db);

// A run named on the command line: a run folder (or its report.json), else an id, an id prefix,
// latest or latest~N in the history, with its report. The history is opened only when needed.
// Errors: no such folder or run; a report.json that is missing or cannot be read.
StatusOr<LoadedRun> LoadRun(const std::string& name, const std::string& db_flag,
                            std::unique_ptr<RunDb>& db);

struct LoadedComparison {
  std::vector<LoadedRun> runs;  // the baseline first, the candidate last
  CompareOptions options;       // with the history's run-to-run spread, when known
};

// The runs `names` with their reports; `baseline` (empty: the first of `names`) is a run name,
// `ancestor` (the newest stored run made from HEAD or an ancestor) or `last:K` (the last K
// stored runs of the candidate's kind and config hash, pooled). Errors: as LoadRun, a bad
// `last:K`, no baseline of that form yet (then *no_baseline_yet is set, when given: the first
// runs of a config), fewer than two runs. `command` ("compare", "gate") names the command in
// messages.
StatusOr<LoadedComparison> LoadComparison(const std::vector<std::string>& names,
                                          const std::string& baseline, const std::string& db_flag,
                                          std::unique_ptr<RunDb>& db, std::string_view command,
                                          bool* no_baseline_yet = nullptr);

}  // namespace trainprof::history
