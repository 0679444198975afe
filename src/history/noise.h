// How much a figure changed between two sets of step times, and how sure that is: the
// Hodges–Lehmann estimate of the shift between the log step times of a baseline and a candidate
// (the median of every candidate/baseline ratio), with the 95 % confidence interval that inverts
// the Mann–Whitney test (Moses' distribution-free interval), widened by the run-to-run spread
// when it is known. docs/ci.md says why this method and not a bootstrap.
//
//   history::StepGroups base = {{0.101, 0.099, ...}};            // one run: its step times
//   history::StepGroups cand = {{0.105, ...}, {0.104, ...}};     // two runs (--repeat 2)
//   history::RelativeChange c = history::CompareSteps(base, cand, {});
//   if (c.has_interval) fmt::print("{:+.1f} % [{:+.1f}, {:+.1f}]", 100 * c.change,
//                                   100 * c.low, 100 * c.high);
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "base/stats.h"

namespace trainprof::history {

inline constexpr double kNoValue = std::numeric_limits<double>::quiet_NaN();

// Positive per-step values (step times, or per-step throughput), one vector per run.
using StepGroups = std::vector<std::vector<double>>;

// The run-to-run spread known from elsewhere (the run history), used when neither side has
// several runs of its own: the standard deviation of log step times between runs, and the
// degrees of freedom of that estimate (runs - 1). sd NaN: unknown.
struct RunSpread {
  double sd = kNoValue;
  int64_t df = 0;
  std::string source;  // "history: 6 runs of config 3f9a..." for the report
  // How many runs the estimate could draw on: also set when there were too few (sd NaN), so
  // that a warning can say how many more runs would make the gate sound.
  int64_t runs = 0;
};

// Fewer runs than this give no run-to-run spread (the estimate needs 2 degrees of freedom).
inline constexpr int64_t kMinSpreadRuns = 3;

// One earlier run of a configuration, as the run history keeps it: the median of its log step
// times, the standard deviation of its log step times (within the run), and its step count.
struct RunNoise {
  double log_median = kNoValue;
  double log_sd = kNoValue;  // NaN when unknown (older histories): no within-run correction
  int64_t steps = 0;
};

// The between-run standard deviation of log step times, by variance components: the variance
// of the runs' log medians less the part their own step-to-step noise explains (a median of n
// steps varies by pi/2 * sd^2 / n between runs even when nothing else does), never below 0;
// df = runs - 1. Fewer than kMinSpreadRuns runs: sd NaN, df 0, runs set. `source` is copied.
RunSpread EstimateRunSpread(const std::vector<RunNoise>& runs, std::string source);

// The robust standard deviation (1.4826 x the median absolute deviation) of the logs of the
// positive values, and their count; NaN with fewer than 2.
double RobustLogSd(const std::vector<double>& values, int64_t* count);

// A run's noise from its step times: the median and robust sd of their logs, and their count.
RunNoise RunNoiseOf(const std::vector<double>& step_times);

// How many runs a gate needs on this machine: the 95 % half-width of a comparison with
// `baseline_runs` pooled baseline runs and `candidate_runs` candidate runs of `steps` steps
// each, given the run-to-run spread and the within-run sd of log step times (relative, on the
// log scale: 0.03 = about 3 %). NaN when the spread is unknown.
double GateHalfWidth(const RunSpread& spread, double within_sd, int64_t steps,
                     int64_t baseline_runs, int64_t candidate_runs);

struct RunPlan {
  int64_t baseline_runs = 0;   // 0: no plan reaches the bound within kMaxPlanRuns
  int64_t candidate_runs = 0;  // 1 unless a single candidate run cannot reach the bound
  double half_width = kNoValue;
};
inline constexpr int64_t kMaxPlanRuns = 50;

// The fewest runs whose interval half-width is at most `bound` (0.03 for 3 %): the fewest
// baseline runs with one candidate run, else the fewest repeats of both sides (--repeat R
// against last:R). baseline_runs 0 when even kMaxPlanRuns a side do not reach it.
RunPlan PlanRuns(const RunSpread& spread, double within_sd, int64_t steps, double bound);

struct RelativeChange {
  bool has_interval = false;  // false: too few steps for a 95 % interval
  // Relative changes, candidate against baseline: +0.031 = 3.1 % higher. NaN without data.
  double change = kNoValue, low = kNoValue, high = kNoValue;
  int64_t base_steps = 0, cand_steps = 0, base_runs = 0, cand_runs = 0;
  double base_median = kNoValue, cand_median = kNoValue;  // medians of the pooled values
  // The run-to-run standard deviation (of log values) that widened the interval, NaN if none.
  double run_sd = kNoValue;
  std::string run_sd_source;  // "these runs (df 4)", a RunSpread's source, or ""
};

// The change of `cand` against `base` with a 95 % interval. Steps of a side's runs are pooled;
// the run-to-run spread is added to the step-to-step interval in quadrature, scaled by Student's
// t: the spread of these runs (the pooled standard deviation of the runs' median log values, when
// a side has several) or `prior`, whichever has more degrees of freedom. Never fails: empty input
// or too few steps give has_interval false (change is still the point estimate when both sides have
// a step).
RelativeChange CompareSteps(const StepGroups& base, const StepGroups& cand, const RunSpread& prior);

// The k-th smallest (1-based, 1 <= k <= x.size() * y.size()) of all differences y[j] - x[i];
// x and y sorted ascending and non-empty. Bisection over the values until few differences are
// left, then those are listed and selected: O((|x| + |y|) * log(range / spacing)), exact.
double KthPairwiseDifference(const std::vector<double>& x, const std::vector<double>& y, int64_t k);

// Student's t quantile for a two-sided 95 % interval with `df` degrees of freedom (df >= 1).
double StudentT975(int64_t df);

// The median (base/stats.h: NaN when empty).
using base::Median;

}  // namespace trainprof::history
