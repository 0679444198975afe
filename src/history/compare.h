// `trainprof compare`: two or more finished runs side by side (the first is the baseline), and the
// regression gate that fails a candidate whose key figures moved past a bound.
//
//   std::vector<history::Bound> bounds = {*history::ParseBound("training_throughput < -10%")};
//   auto cmp = history::BuildCompareReport(runs, bounds);   // runs[0]: the baseline
//   if (!cmp.ok()) ...                 // a bound names a figure a run does not have
//   if (cmp->gate_failed()) exit(1);     // cmp->report holds the table of what crossed
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "history/key_figures.h"
#include "history/run_db.h"
#include "report/report.h"
#include "trainprof/status.h"

namespace trainprof::history {

struct LoadedRun {
  std::string given;                // as named on the command line: "latest", an id, a folder
  std::optional<RunRecord> record;  // its row in the run history, when it has one
  std::string dir;                  // its run folder
  report::Report report;            // its report.json
};

// One --fail-if: "FIGURE OP BOUND". FIGURE is a key figure (training_throughput, peak_memory,
// ...) or SECTION.METRIC of report.json; OP is <, <=, > or >=; BOUND is a signed number, a change
// in percent of the baseline when it ends in %, else a change in the figure's base unit
// (seconds, bytes, percentage points).
struct Bound {
  std::string text;
  std::string figure;
  std::string op;
  double limit = 0;
  bool relative = false;
};

// Errors (InvalidArgument, quoting the expression): not FIGURE OP BOUND; an unknown key figure.
StatusOr<Bound> ParseBound(std::string_view text);

struct Comparison {
  report::Report report;  // kind "compare"
  int64_t bounds_crossed = 0;
  bool gate_failed() const { return bounds_crossed > 0; }
};

// Runs are compared on what they share; what only some have is named in notes. Errors: a bound
// whose figure the baseline or the candidate (the last run) did not measure (InvalidArgument).
StatusOr<Comparison> BuildCompareReport(const std::vector<LoadedRun>& runs,
                                        const std::vector<Bound>& bounds);

}  // namespace trainprof::history
