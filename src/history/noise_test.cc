#include "history/noise.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace trainprof::history {
namespace {

std::vector<double> Sorted(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(NoiseTest, KthPairwiseDifferenceMatchesEnumeration) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 40; ++trial) {
    std::uniform_int_distribution<int> size(1, 30);
    // Few distinct values, so that ties and equal differences are common.
    std::uniform_int_distribution<int> value(-5, 5);
    std::vector<double> x(static_cast<size_t>(size(rng))), y(static_cast<size_t>(size(rng)));
    for (double& v : x) v = value(rng) * 0.25;
    for (double& v : y) v = value(rng) * 0.25 + (trial % 3) * 0.1;
    x = Sorted(x), y = Sorted(y);
    std::vector<double> all;
    for (double a : x)
      for (double b : y) all.push_back(b - a);
    std::sort(all.begin(), all.end());
    for (size_t k = 1; k <= all.size(); k += 1 + all.size() / 17)
      EXPECT_EQ(KthPairwiseDifference(x, y, static_cast<int64_t>(k)), all[k - 1])
          << trial << " " << k;
    EXPECT_EQ(KthPairwiseDifference(x, y, static_cast<int64_t>(all.size())), all.back());
  }
}

// Large enough samples take the subsample's bracket first: the same answers, at every rank.
TEST(NoiseTest, KthPairwiseDifferenceOfLargeSamplesMatchesEnumeration) {
  std::mt19937_64 rng(11);
  std::lognormal_distribution<double> d(0, 0.3);
  std::vector<double> x(300), y(517);
  for (double& v : x) v = std::log(d(rng));
  for (double& v : y) v = std::log(1.05 * d(rng));
  x = Sorted(x), y = Sorted(y);
  std::vector<double> all;
  for (double a : x)
    for (double b : y) all.push_back(b - a);
  std::sort(all.begin(), all.end());
  const int64_t n = static_cast<int64_t>(all.size());
  for (int64_t k : {int64_t{1}, int64_t{2}, n / 100, n / 3, n / 2, n / 2 + 1, n - n / 40, n - 1, n})
    EXPECT_EQ(KthPairwiseDifference(x, y, k), all[static_cast<size_t>(k - 1)]) << k;
}

TEST(NoiseTest, StudentTQuantiles) {
  EXPECT_DOUBLE_EQ(StudentT975(1), 12.706);
  EXPECT_DOUBLE_EQ(StudentT975(4), 2.776);
  EXPECT_NEAR(StudentT975(60), 2.000, 0.001);
  EXPECT_NEAR(StudentT975(1000000), 1.960, 0.001);
  EXPECT_TRUE(std::isnan(StudentT975(0)));
}

// Log-normal step times around `median`, as step times are: skewed, with a long right tail.
std::vector<double> NoisySteps(std::mt19937_64& rng, size_t n, double median, double sigma) {
  std::lognormal_distribution<double> d(std::log(median), sigma);
  std::vector<double> v(n);
  for (double& x : v) x = d(rng);
  return v;
}

TEST(NoiseTest, AScaledCopyChangesByExactlyTheScale) {
  std::mt19937_64 rng(1);
  std::vector<double> base = NoisySteps(rng, 201, 0.1, 0.2), cand = base;
  for (double& x : cand) x *= 1.07;
  RelativeChange c = CompareSteps({base}, {cand}, {});
  ASSERT_TRUE(c.has_interval);
  EXPECT_NEAR(c.change, 0.07, 1e-12);
  EXPECT_LT(c.low, 0.07);
  EXPECT_GT(c.high, 0.07);
  EXPECT_EQ(c.base_steps, 201);
  EXPECT_EQ(c.cand_runs, 1);
  EXPECT_TRUE(c.run_sd_source.empty());
}

// The 95 % interval holds the true shift in about 95 % of repeated experiments; 400 experiments
// give 380 +- 9 (one binomial sd 4.4), so the bounds below fail a broken interval, not chance.
TEST(NoiseTest, IntervalCoversTheTrueShiftNinetyFivePercentOfTheTime) {
  std::mt19937_64 rng(2024);
  int covered = 0;
  double width = 0;
  for (int i = 0; i < 400; ++i) {
    std::vector<double> a = NoisySteps(rng, 60, 0.050, 0.1), b = NoisySteps(rng, 80, 0.052, 0.1);
    RelativeChange c = CompareSteps({a}, {b}, {});
    ASSERT_TRUE(c.has_interval);
    covered += (c.low <= 0.04 && 0.04 <= c.high) ? 1 : 0;
    width += c.high - c.low;
  }
  EXPECT_GE(covered, 366);
  EXPECT_LE(covered, 394);
  EXPECT_LT(width / 400, 0.08);  // and it is not wide for the sake of coverage
}

TEST(NoiseTest, TooFewStepsHaveNoInterval) {
  RelativeChange c = CompareSteps({{1.0, 1.1, 1.2}}, {{2.0, 2.1, 2.2}}, {});
  EXPECT_FALSE(c.has_interval);
  EXPECT_EQ(c.base_steps + c.cand_steps, 6);
  EXPECT_GT(c.change, 0.5);  // the point estimate is still there
  RelativeChange four = CompareSteps({{1.0, 1.1, 1.2, 1.05}}, {{2.0, 2.1, 2.2, 2.05}}, {});
  ASSERT_TRUE(four.has_interval);
  EXPECT_GT(four.low, 0.5);  // four against four, every step slower: beyond a 50 % bound
  RelativeChange none = CompareSteps({}, {{1.0}}, {});
  EXPECT_FALSE(none.has_interval);
  EXPECT_TRUE(std::isnan(none.change));
}

TEST(NoiseTest, RunToRunSpreadWidensTheInterval) {
  std::mt19937_64 rng(5);
  // Three runs a side whose medians wander by a few percent, as on a shared machine.
  StepGroups a, b;
  for (double m : {0.100, 0.104, 0.097}) a.push_back(NoisySteps(rng, 300, m, 0.05));
  for (double m : {0.102, 0.099, 0.105}) b.push_back(NoisySteps(rng, 300, m, 0.05));
  RelativeChange pooled = CompareSteps(a, b, {});
  ASSERT_TRUE(pooled.has_interval);
  EXPECT_EQ(pooled.base_runs, 3);
  EXPECT_EQ(pooled.run_sd_source, "these runs (df 4)");
  EXPECT_NEAR(pooled.run_sd, 0.03, 0.015);
  // The same steps taken as one run each: the interval of step noise alone is far narrower.
  StepGroups a1 = {{}}, b1 = {{}};
  for (const auto& g : a) a1[0].insert(a1[0].end(), g.begin(), g.end());
  for (const auto& g : b) b1[0].insert(b1[0].end(), g.begin(), g.end());
  RelativeChange merged = CompareSteps(a1, b1, {});
  EXPECT_LT(merged.high - merged.low, 0.5 * (pooled.high - pooled.low));
  EXPECT_TRUE(pooled.low < 0 && pooled.high > 0);
  // One run a side: a known spread from the history is used, and named.
  RelativeChange prior = CompareSteps({a[0]}, {b[0]}, {0.03, 5, "history: 6 runs"});
  RelativeChange bare = CompareSteps({a[0]}, {b[0]}, {});
  EXPECT_EQ(prior.run_sd_source, "history: 6 runs");
  EXPECT_GT(prior.high - prior.low, 2 * (bare.high - bare.low));
  EXPECT_DOUBLE_EQ(prior.change, bare.change);
}

// A run of `steps` log-normal step times around exp(log_mean) with within-run sd `sigma`, as the
// history keeps it.
RunNoise RecordedNoise(std::mt19937_64& rng, double log_mean, double sigma, int64_t steps) {
  return RunNoiseOf(NoisySteps(rng, static_cast<size_t>(steps), std::exp(log_mean), sigma));
}

// Histories with a known between-run spread: the variance components give it back.
TEST(RunSpreadTest, VarianceComponentsRecoverTheBetweenRunSpread) {
  std::mt19937_64 rng(21);
  std::normal_distribution<double> between(0, 0.02);
  std::vector<RunNoise> runs;
  for (int i = 0; i < 60; ++i)
    runs.push_back(RecordedNoise(rng, std::log(0.1) + between(rng), 0.08, 300));
  const RunSpread s = EstimateRunSpread(runs, "test");
  EXPECT_EQ(s.runs, 60);
  EXPECT_EQ(s.df, 59);
  EXPECT_EQ(s.source, "test");
  EXPECT_NEAR(s.sd, 0.02, 0.005);
}

// No spread between runs, few noisy steps each: their medians still differ by their own step
// noise, which the estimate takes out instead of calling it run-to-run noise.
TEST(RunSpreadTest, StepNoiseIsNotTakenForRunToRunNoise) {
  std::mt19937_64 rng(22);
  std::vector<RunNoise> runs;
  for (int i = 0; i < 60; ++i) runs.push_back(RecordedNoise(rng, std::log(0.1), 0.2, 10));
  double mean = 0, ss = 0;
  for (const RunNoise& r : runs) mean += r.log_median / 60;
  for (const RunNoise& r : runs) ss += (r.log_median - mean) * (r.log_median - mean) / 59;
  EXPECT_GT(std::sqrt(ss), 0.06);  // the raw spread of the medians: sqrt(pi/2 * 0.04 / 10)
  EXPECT_LT(EstimateRunSpread(runs, "").sd, 0.03);
  // Without the within-run figures (an older history) nothing is taken out.
  for (RunNoise& r : runs) r.log_sd = kNoValue;
  EXPECT_NEAR(EstimateRunSpread(runs, "").sd, std::sqrt(ss), 1e-12);
}

TEST(RunSpreadTest, FewerThanThreeRunsGiveNoSpreadButCountThem) {
  std::mt19937_64 rng(23);
  std::vector<RunNoise> runs = {RecordedNoise(rng, 0, 0.05, 100),
                                RecordedNoise(rng, 0.01, 0.05, 100)};
  RunSpread s = EstimateRunSpread(runs, "two");
  EXPECT_TRUE(std::isnan(s.sd));
  EXPECT_EQ(s.runs, 2);
  EXPECT_EQ(s.df, 0);
  runs.push_back({kNoValue, kNoValue, 0});  // a run without a median does not count
  EXPECT_EQ(EstimateRunSpread(runs, "").runs, 2);
  runs.push_back(RecordedNoise(rng, 0.02, 0.05, 100));
  EXPECT_TRUE(std::isfinite(EstimateRunSpread(runs, "").sd));
}

TEST(RunSpreadTest, RunNoiseOfStepTimes) {
  const RunNoise n = RunNoiseOf({0.1, 0.2, 0.4, -1.0});  // a value that is not a time is left out
  EXPECT_EQ(n.steps, 3);
  EXPECT_NEAR(n.log_median, std::log(0.2), 1e-12);
  EXPECT_NEAR(n.log_sd, 1.482602218505602 * std::log(2.0), 1e-12);
}

TEST(RunSpreadTest, RobustLogSdIgnoresATailStep) {
  std::vector<double> v = {1.0, 1.1, 0.9, 1.05, 0.95, 50.0};
  int64_t n = 0;
  const double sd = RobustLogSd(v, &n);
  EXPECT_EQ(n, 6);
  EXPECT_LT(sd, 0.2);
  EXPECT_TRUE(std::isnan(RobustLogSd({1.0}, &n)));
  EXPECT_EQ(n, 1);
}

// The half-width of a gate, and the runs a bound needs, worked by hand: t(9) = 2.262.
TEST(RunSpreadTest, PlansTheRunsABoundNeeds) {
  const RunSpread s{0.02, 9, "h", 10};
  EXPECT_NEAR(GateHalfWidth(s, kNoValue, 0, 1, 1), 2.262 * 0.02 * std::sqrt(2.0), 1e-12);
  // Step noise adds in quadrature: 1.96 * 0.1 * sqrt(pi/3 * 2/100).
  const double step = 1.959963984540054 * 0.1 * std::sqrt(std::acos(-1.0) / 3 * 0.02);
  EXPECT_NEAR(GateHalfWidth(s, 0.1, 100, 1, 1), std::hypot(step, 2.262 * 0.02 * std::sqrt(2.0)),
              1e-12);
  // One candidate run never gets below t * sd = 4.5 %, so a 3 % bound needs repeats on both
  // sides: 4.524 % * sqrt(2 / R) <= 3 % from R = 5.
  RunPlan p = PlanRuns(s, kNoValue, 0, 0.03);
  EXPECT_EQ(p.baseline_runs, 5);
  EXPECT_EQ(p.candidate_runs, 5);
  EXPECT_LE(p.half_width, 0.03);
  // Half the spread: 2.262 % * sqrt(1 + 1/K) <= 3 % from K = 2, against one run.
  p = PlanRuns({0.01, 9, "h", 10}, kNoValue, 0, 0.03);
  EXPECT_EQ(p.baseline_runs, 2);
  EXPECT_EQ(p.candidate_runs, 1);
  // Unreachable, and unknown.
  EXPECT_EQ(PlanRuns({0.2, 9, "h", 10}, kNoValue, 0, 0.03).baseline_runs, 0);
  EXPECT_EQ(PlanRuns({kNoValue, 0, "", 2}, kNoValue, 0, 0.03).baseline_runs, 0);
}

// The interval widens by exactly the known run-to-run half-width, added in quadrature.
TEST(RunSpreadTest, AKnownSpreadWidensTheIntervalByItsHalfWidth) {
  std::mt19937_64 rng(24);
  const StepGroups a = {NoisySteps(rng, 200, 0.100, 0.05)}, b = {NoisySteps(rng, 200, 0.101, 0.05)};
  const RelativeChange bare = CompareSteps(a, b, {});
  const RelativeChange wide = CompareSteps(a, b, {0.02, 9, "history", 10});
  const double shift = std::log1p(bare.change), h = 2.262 * 0.02 * std::sqrt(2.0);
  EXPECT_NEAR(std::log1p(wide.high) - shift, std::hypot(std::log1p(bare.high) - shift, h), 1e-12);
  EXPECT_NEAR(shift - std::log1p(wide.low), std::hypot(shift - std::log1p(bare.low), h), 1e-12);
  EXPECT_EQ(wide.run_sd_source, "history");
  EXPECT_DOUBLE_EQ(wide.run_sd, 0.02);
}

// A history's estimate with more degrees of freedom wins over the compared runs' own.
TEST(RunSpreadTest, TheSurerSpreadIsUsed) {
  std::mt19937_64 rng(25);
  StepGroups a, b;
  for (double m : {0.100, 0.104}) a.push_back(NoisySteps(rng, 100, m, 0.05));
  for (double m : {0.102, 0.099}) b.push_back(NoisySteps(rng, 100, m, 0.05));
  EXPECT_EQ(CompareSteps(a, b, {0.02, 1, "few", 2}).run_sd_source, "these runs (df 2)");
  EXPECT_EQ(CompareSteps(a, b, {0.02, 9, "many", 10}).run_sd_source, "many");
}

}  // namespace
}  // namespace trainprof::history
