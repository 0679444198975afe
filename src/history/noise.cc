#include "history/noise.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>

namespace trainprof::history {
namespace {

constexpr double kZ975 = 1.959963984540054;  // the standard normal's 97.5 % quantile

// The number of pairs with y[j] - x[i] <= d: for ascending y, the first i that qualifies only
// moves right, so one pass of two pointers counts them.
int64_t CountAtMost(const std::vector<double>& x, const std::vector<double>& y, double d) {
  const int64_t n = static_cast<int64_t>(x.size());
  int64_t count = 0, p = 0;
  for (double yj : y) {
    while (p < n && yj - x[static_cast<size_t>(p)] > d) ++p;
    count += n - p;
  }
  return count;
}

// Appends every difference d = y[j] - x[i] with a < d <= b.
void DifferencesIn(const std::vector<double>& x, const std::vector<double>& y, double a, double b,
                   std::vector<double>& out) {
  const size_t n = x.size();
  size_t pa = 0, pb = 0;  // first i with y[j] - x[i] <= a, and <= b
  for (double yj : y) {
    while (pb < n && yj - x[pb] > b) ++pb;
    while (pa < n && yj - x[pa] > a) ++pa;
    for (size_t i = pb; i < pa; ++i) out.push_back(yj - x[i]);
  }
}

// (a, b] with count(a) < k <= count(b), narrower than all differences when the samples are
// large: the quantiles around k / (n m) of a strided subsample's differences (about 128 x 128),
// each checked by counting, with a margin of about 7 standard errors of such a quantile. A check
// that fails keeps that side at the full range, so the bracket is always right.
struct Bracket {
  double a, b;
  int64_t count_a, count_b;
};

Bracket FirstBracket(const std::vector<double>& x, const std::vector<double>& y, int64_t k) {
  Bracket br{std::nextafter(y.front() - x.back(), -HUGE_VAL), y.back() - x.front(), 0,
             static_cast<int64_t>(x.size() * y.size())};
  const size_t sx = x.size() / 128, sy = y.size() / 128;
  if (sx < 2 || sy < 2) return br;
  std::vector<double> d;
  for (size_t i = 0; i < x.size(); i += sx)
    for (size_t j = 0; j < y.size(); j += sy) d.push_back(y[j] - x[i]);
  const double p = (static_cast<double>(k) - 0.5) / static_cast<double>(br.count_b);
  const double last = static_cast<double>(d.size() - 1);
  auto quantile = [&](double q) {
    const auto at = d.begin() + static_cast<std::ptrdiff_t>(std::clamp(q, 0.0, 1.0) * last);
    std::nth_element(d.begin(), at, d.end());
    return *at;
  };
  const double lo = quantile(p - 0.03), hi = quantile(p + 0.03);
  if (const int64_t c = CountAtMost(x, y, lo); c < k) br.a = lo, br.count_a = c;
  if (const int64_t c = CountAtMost(x, y, hi); c >= k) br.b = hi, br.count_b = c;
  return br;
}

// The logs of the positive finite values, appended to `out`.
void AppendLogs(const std::vector<double>& values, std::vector<double>& out) {
  for (double v : values)
    if (v > 0 && std::isfinite(v)) out.push_back(std::log(v));
}

// The logs of every positive finite value of every run, sorted.
std::vector<double> PooledLogs(const StepGroups& groups) {
  std::vector<double> out;
  for (const auto& g : groups) AppendLogs(g, out);
  std::sort(out.begin(), out.end());
  return out;
}

// Median log value of each run that has steps.
std::vector<double> RunMedians(const StepGroups& groups) {
  std::vector<double> out;
  for (const auto& g : groups) {
    std::vector<double> logs;
    AppendLogs(g, logs);
    if (!logs.empty()) out.push_back(Median(std::move(logs)));
  }
  return out;
}

// 1.4826 x the median absolute deviation of `logs` from `median` (logs is reused).
double RobustSdOfLogs(std::vector<double> logs, double median) {
  if (logs.size() < 2) return kNoValue;
  for (double& v : logs) v = std::abs(v - median);
  return 1.482602218505602 * Median(std::move(logs));
}

// The pooled standard deviation of the runs' medians around their side's mean (NaN with fewer
// than three runs in all: one side's spread needs two of its own).
double PooledRunSd(const std::vector<double>& a, const std::vector<double>& b, int64_t* df) {
  *df = static_cast<int64_t>(a.size() + b.size()) - 2;
  if (*df < 1) return kNoValue;
  double ss = 0;
  for (const auto* side : {&a, &b}) {
    double mean = 0;
    for (double m : *side) mean += m;
    mean /= static_cast<double>(side->size());
    for (double m : *side) ss += (m - mean) * (m - mean);
  }
  return std::sqrt(ss / static_cast<double>(*df));
}

// The run-to-run half-width on the log scale, or 0 when the spread is unknown.
double RunHalfWidth(const std::vector<double>& base_medians,
                    const std::vector<double>& cand_medians, const RunSpread& prior,
                    RelativeChange& out) {
  int64_t df = 0;
  double sd = PooledRunSd(base_medians, cand_medians, &df);
  // Both estimate the same spread; the one with more degrees of freedom is the surer (and its
  // Student's t the smaller).
  const bool prior_known = std::isfinite(prior.sd) && prior.df >= 1;
  if (prior_known && (!std::isfinite(sd) || prior.df > df)) {
    sd = prior.sd, df = prior.df;
    out.run_sd_source = prior.source;
  } else if (std::isfinite(sd)) {
    out.run_sd_source = fmt::format("these runs (df {})", df);
  } else {
    return 0;
  }
  out.run_sd = sd;
  const double inv = 1.0 / static_cast<double>(base_medians.size()) +
                     1.0 / static_cast<double>(cand_medians.size());
  return StudentT975(df) * sd * std::sqrt(inv);
}

}  // namespace

double KthPairwiseDifference(const std::vector<double>& x, const std::vector<double>& y,
                             int64_t k) {
  // Bisect (a, b] until it holds few differences, the k-th among them: count(a) < k <= count(b).
  const int64_t few = 4 * static_cast<int64_t>(x.size() + y.size()) + 1024;
  auto [a, b, count_a, count_b] = FirstBracket(x, y, k);
  while (count_b - count_a > few) {
    const double mid = a + (b - a) / 2;
    if (mid <= a || mid >= b) return b;  // no double between them: the k-th difference is b
    const int64_t c = CountAtMost(x, y, mid);
    if (c >= k) {
      b = mid, count_b = c;
    } else {
      a = mid, count_a = c;
    }
  }
  // Then list them and select: exact, whatever the spacing of the differences.
  std::vector<double> in;
  in.reserve(static_cast<size_t>(count_b - count_a));
  DifferencesIn(x, y, a, b, in);
  const auto nth = in.begin() + (k - count_a - 1);
  std::nth_element(in.begin(), nth, in.end());
  return *nth;
}

double StudentT975(int64_t df) {
  static constexpr double kT[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306,
                                  2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120,
                                  2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
                                  2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
  if (df < 1) return kNoValue;
  if (df <= 30) return kT[df - 1];
  // Cornish–Fisher's first term: within 0.001 of the exact quantile from 30 on.
  const double z = kZ975;
  return z + (z * z * z + z) / (4.0 * static_cast<double>(df));
}

RelativeChange CompareSteps(const StepGroups& base, const StepGroups& cand,
                            const RunSpread& prior) {
  RelativeChange out;
  const std::vector<double> x = PooledLogs(base), y = PooledLogs(cand);
  const std::vector<double> xm = RunMedians(base), ym = RunMedians(cand);
  out.base_steps = static_cast<int64_t>(x.size());
  out.cand_steps = static_cast<int64_t>(y.size());
  out.base_runs = static_cast<int64_t>(xm.size());
  out.cand_runs = static_cast<int64_t>(ym.size());
  if (x.empty() || y.empty()) return out;
  out.base_median = std::exp(Median(x));
  out.cand_median = std::exp(Median(y));
  const int64_t n = out.base_steps * out.cand_steps;
  double shift = KthPairwiseDifference(x, y, (n + 1) / 2);
  if (n % 2 == 0) shift = 0.5 * (shift + KthPairwiseDifference(x, y, n / 2 + 1));
  out.change = std::expm1(shift);
  // Moses: the interval between the k-th smallest and k-th largest difference, k from the
  // normal approximation of the Mann–Whitney statistic's 2.5 % quantile.
  const double nm = static_cast<double>(n);
  const double sd_u = std::sqrt(nm * static_cast<double>(x.size() + y.size() + 1) / 12.0);
  const int64_t k = static_cast<int64_t>(std::floor(nm / 2 - kZ975 * sd_u));
  if (k < 1) return out;
  const double lo = KthPairwiseDifference(x, y, k), hi = KthPairwiseDifference(x, y, n + 1 - k);
  const double h = RunHalfWidth(xm, ym, prior, out);
  out.low = std::expm1(shift - std::hypot(shift - lo, h));
  out.high = std::expm1(shift + std::hypot(hi - shift, h));
  out.has_interval = true;
  return out;
}

RunSpread EstimateRunSpread(const std::vector<RunNoise>& runs, std::string source) {
  RunSpread out;
  out.source = std::move(source);
  std::vector<const RunNoise*> usable;
  for (const RunNoise& r : runs)
    if (std::isfinite(r.log_median)) usable.push_back(&r);
  out.runs = static_cast<int64_t>(usable.size());
  if (out.runs < kMinSpreadRuns) return out;
  double mean = 0;
  for (const RunNoise* r : usable) mean += r->log_median;
  mean /= static_cast<double>(usable.size());
  double ss = 0, within = 0;
  for (const RunNoise* r : usable) {
    ss += (r->log_median - mean) * (r->log_median - mean);
    // The sampling variance of a median of n steps (asymptotically pi/2 sd^2 / n).
    if (std::isfinite(r->log_sd) && r->steps > 0)
      within += std::numbers::pi / 2 * r->log_sd * r->log_sd / static_cast<double>(r->steps);
  }
  out.df = out.runs - 1;
  const double between = ss / static_cast<double>(out.df) - within / static_cast<double>(out.runs);
  out.sd = std::sqrt(std::max(0.0, between));
  return out;
}

double RobustLogSd(const std::vector<double>& values, int64_t* count) {
  const RunNoise n = RunNoiseOf(values);
  *count = n.steps;
  return n.log_sd;
}

RunNoise RunNoiseOf(const std::vector<double>& step_times) {
  RunNoise out;
  std::vector<double> logs;
  AppendLogs(step_times, logs);
  out.steps = static_cast<int64_t>(logs.size());
  out.log_median = Median(logs);
  out.log_sd = RobustSdOfLogs(std::move(logs), out.log_median);
  return out;
}

double GateHalfWidth(const RunSpread& spread, double within_sd, int64_t steps,
                     int64_t baseline_runs, int64_t candidate_runs) {
  if (!std::isfinite(spread.sd) || spread.df < 1 || baseline_runs < 1 || candidate_runs < 1)
    return kNoValue;
  const double k = static_cast<double>(baseline_runs), r = static_cast<double>(candidate_runs);
  double step_half = 0;  // Hodges-Lehmann's interval: sd * sqrt(pi / 3) * sqrt(1/n + 1/m)
  if (std::isfinite(within_sd) && steps > 0) {
    const double n = static_cast<double>(steps);
    step_half = kZ975 * within_sd * std::sqrt(std::numbers::pi / 3 * (1 / (k * n) + 1 / (r * n)));
  }
  const double run_half = StudentT975(spread.df) * spread.sd * std::sqrt(1 / k + 1 / r);
  return std::hypot(step_half, run_half);
}

RunPlan PlanRuns(const RunSpread& spread, double within_sd, int64_t steps, double bound) {
  RunPlan plan;
  if (!std::isfinite(spread.sd)) return plan;
  auto fits = [&](int64_t k, int64_t r) {
    const double h = GateHalfWidth(spread, within_sd, steps, k, r);
    if (!(h <= bound)) return false;
    plan = {k, r, h};
    return true;
  };
  for (int64_t k = 1; k <= kMaxPlanRuns; ++k)
    if (fits(k, 1)) return plan;
  for (int64_t r = 2; r <= kMaxPlanRuns; ++r)
    if (fits(r, r)) return plan;
  plan.half_width = GateHalfWidth(spread, within_sd, steps, kMaxPlanRuns, kMaxPlanRuns);
  return plan;
}

}  // namespace trainprof::history
