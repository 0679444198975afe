// Pieces shared by compare.cc (the comparison tables) and gate.cc (the regression gate); not a
// public header.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "history/compare.h"
#include "history/noise.h"
#include "history/step_series.h"
#include "report/report.h"

namespace trainprof::history::internal {

// "A", "B", ... "Z", then "R27", ...
std::string Label(size_t i);
// The change of `cand` against `base` in percent; NaN when either is unknown or base is 0.
double Pct(double base, double cand);
// An empty cell for NaN.
report::Value Opt(double v);

struct FigureValue {
  double value = kNoValue;
  report::Unit unit = report::Unit::kNumber;
  std::string title;
  bool found = false;  // the run has this metric (its value may be empty)
  bool known = false;  // ... and a value for it
};

// A key figure, or SECTION.METRIC from the report; for a run with pooled runs, the median over
// them all.
FigureValue Lookup(const LoadedRun& run, const std::string& figure);

// The per-step values of one side of a comparison: the run's groups, then its pooled runs'.
StepSeries SideSteps(const LoadedRun& run);

// The series a key figure is gated on through its interval: step_time_s for step_time,
// samples_per_s for training_throughput; nullptr for any other figure.
const StepGroups* SeriesOf(const StepSeries& s, const std::string& figure);

// "inconclusive (N steps)" and friends: the verdict words of docs/ci.md.
std::string IntervalText(const RelativeChange& c);

// The change of every run after the first against the first, for each figure with per-step
// data in both: keyed by (run index, figure), computed once for the gate and the tables.
using Intervals = std::map<std::pair<size_t, std::string>, RelativeChange>;
Intervals ComputeIntervals(const std::vector<StepSeries>& steps, const CompareOptions& o);

// The gate section: one row per bound, candidate (runs.back()) against baseline (runs.front()).
void GateSection(report::Report& r, const std::vector<LoadedRun>& runs, const Intervals& intervals,
                 const std::vector<Bound>& bounds, Comparison& out);

// Errors: a bound whose figure a run lacks, or whose unit does not fit the figure.
Status CheckBounds(const std::vector<LoadedRun>& runs, const std::vector<Bound>& bounds);

}  // namespace trainprof::history::internal
