// `trainprof compare`: two or more finished runs side by side (the first is the baseline), and the
// regression gate that fails a candidate whose key figures moved past a bound.
//
//   std::vector<history::Bound> bounds = {*history::ParseBound("step_time > +3%")};
//   auto cmp = history::BuildCompareReport(runs, bounds, {});   // runs[0]: the baseline
//   if (!cmp.ok()) ...                 // a bound names a figure a run does not have
//   for (auto& v : cmp->verdicts) ...  // "step_time > +3%: +0.4 % [-1.2, +2.0] ...: within noise"
//   if (cmp->gate_failed()) exit(1);   // cmp->report holds the table of what crossed
//
// Step time and throughput are gated on their 95 % confidence interval (history/noise.h) when
// both runs kept per-step data: a bound fails only when the whole interval lies beyond it. Other
// figures compare the two values (the plain mode).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "history/key_figures.h"
#include "history/noise.h"
#include "history/run_db.h"
#include "report/report.h"
#include "trainprof/status.h"

namespace trainprof::history {

struct LoadedRun {
  std::string given;                // as named on the command line: "latest", an id, a folder
  std::optional<RunRecord> record;  // its row in the run history, when it has one
  std::string dir;                  // its run folder
  report::Report report;            // its report.json
  // Earlier runs pooled with this one (--baseline last:k): their steps join this run's for the
  // interval, and a figure without steps is gated on the median over all of them.
  std::vector<LoadedRun> pooled;
};

// One --fail-if: "FIGURE OP BOUND". FIGURE is a key figure (training_throughput, peak_memory,
// ...) or SECTION.METRIC of report.json; OP is <, <=, > or >=; BOUND is a signed number: a change
// in percent of the baseline when it ends in %, a change in percentage points when it ends in pp
// (for figures that are percentages), else a change in the figure's base unit (seconds, bytes).
struct Bound {
  std::string text;
  std::string figure;
  std::string op;
  double limit = 0;
  bool relative = false;  // ends in %
  bool points = false;    // ends in pp
};

// Errors (InvalidArgument, quoting the expression): not FIGURE OP BOUND; an unknown key figure;
// a bound in % on a key figure that is a percentage, or in pp on one that is not.
StatusOr<Bound> ParseBound(std::string_view text);

struct CompareOptions {
  // The run-to-run spread from the run history, used when each side is a single run.
  RunSpread history_spread;
};

struct Comparison {
  report::Report report;  // kind "compare"
  int64_t bounds_crossed = 0;
  int64_t bounds_inconclusive = 0;      // the interval reaches across the bound, or there is none
  int64_t bounds_without_interval = 0;  // too few steps for any interval: no verdict at all
  // One line per bound: "step_time > +3%: +5.1 % [+4.2, +6.0] (95 % CI, 600 steps): beyond
  // noise", in the order given.
  std::vector<std::string> verdicts;
  // What makes the comparison doubtful, for stderr: other hardware, other rank counts, a
  // profile run against an analyze run. Also findings of the report's first section.
  std::vector<std::string> warnings;
  bool gate_failed() const { return bounds_crossed > 0; }
};

// Runs are compared on what they share; what only some have is named in notes. Errors: a bound
// whose figure the baseline or the candidate (the last run) did not measure; a bound's unit that
// does not fit its figure (InvalidArgument).
StatusOr<Comparison> BuildCompareReport(const std::vector<LoadedRun>& runs,
                                        const std::vector<Bound>& bounds,
                                        const CompareOptions& options = {});

}  // namespace trainprof::history
