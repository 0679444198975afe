// The run-to-run noise of a machine, learnt from the run history: the spread between runs of one
// configuration on one host and device (history/noise.h's variance components), for the
// interval of `compare` and `gate`, and the `runs noise` table that says how many runs a gate
// needs for a given bound.
//
//   history::RunSpread s = history::HistorySpread(*db, base.report, commit, candidate_dir);
//   if (std::isnan(s.sd)) ... s.runs runs were found, fewer than kMinSpreadRuns
//   report::Report table = history::NoiseReport(*db->List({.last = 0}), 0.03, db->path());
#pragma once

#include <string>
#include <vector>

#include "history/noise.h"
#include "history/run_db.h"
#include "report/report.h"

namespace trainprof::history {

// At most this many of the newest runs of a configuration are used.
inline constexpr size_t kSpreadRuns = 30;

// The runs whose spread is wanted: those of the baseline's config, host and device.
struct SpreadQuery {
  std::string host, device;
  std::string commit;       // the baseline's commit: its runs are preferred ("" : unknown)
  std::string exclude_dir;  // the candidate's absolute run folder: never part of the noise
};

// The spread of the stored runs with `base`'s config hash, kind, host and device (runs of any
// other are never used), the candidate left out: those made at the baseline's commit when there
// are kMinSpreadRuns of them, else all of them across commits (a code change between them can
// only widen the estimate). Never fails: a history that cannot be read gives an unknown spread
// (sd NaN, runs 0).
RunSpread HistorySpread(const RunDb& db, const report::Report& base, const std::string& commit,
                        const std::string& exclude_dir);

// The same from rows already read (newest first, of one config and kind).
RunSpread SpreadOfRecords(const std::vector<RunRecord>& rows, const SpreadQuery& q);

// `trainprof runs noise`: one row per configuration (config hash, kind, host, device) of
// `rows`, with its runs, the run-to-run and within-run spreads, the half-width of a gate with
// 1 and 5 baseline runs, and the runs a gate needs for `bound` (0.03: a 3 % bound).
report::Report NoiseReport(const std::vector<RunRecord>& rows, double bound,
                           const std::string& db_path);

}  // namespace trainprof::history
