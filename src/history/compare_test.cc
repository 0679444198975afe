// `trainprof compare` as a library: the noise-aware gate on per-step data, percentage points,
// and the setup differences listed first.
#include "history/compare.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>

#include "history/compare_parts.h"
#include "report/format.h"
#include "report/json_reader.h"
#include "report/terminal.h"
#include "util/golden.h"

namespace trainprof::history {
namespace {

using report::Unit;
using report::Value;

// A profile report whose training stage kept these step times in speed.training_rate, with the
// figures the history reads computed from them.
report::Report WithSteps(const std::vector<double>& step_s, double wait_pct = 4.0) {
  report::Report r;
  r.kind = "profile";
  r.AddMeta("host.cpu", std::string("AMD EPYC"));
  r.AddMeta("host.cores", int64_t{2});
  r.AddMeta("device", std::string("cpu"));
  r.config.emplace_back("speed.warmup_batches", int64_t{0});
  r.config.emplace_back("training.batch_size", int64_t{64});
  double total = 0;
  for (double s : step_s) total += s;
  report::Section& s = r.AddSection("speed", "Speed report");
  s.AddMetric("training_avg_throughput_per_sample", "Training throughput per sample",
              64.0 * static_cast<double>(step_s.size()) / total, Unit::kPerSecond);
  s.AddMetric("training_dataloader_wait_pct", "Training time waiting for data", wait_pct,
              Unit::kPercent);
  s.AddTable("speed_report", "Throughput per stage",
             {{"stage", "Stage"}, {"mean_s", "Mean", Unit::kSeconds}})
      .rows.push_back({std::string("training"), total / static_cast<double>(step_s.size())});
  report::Table& t = s.AddTable("training_rate", "Training throughput per step",
                                {{"step", "Step", Unit::kCount},
                                 {"batches_per_s", "Batches/s", Unit::kPerSecond},
                                 {"samples_per_s", "Samples/s", Unit::kPerSecond}},
                                report::TableKind::kSeries);
  for (size_t i = 0; i < step_s.size(); ++i)
    t.rows.push_back({static_cast<int64_t>(i), 1.0 / step_s[i], 64.0 / step_s[i]});
  return r;
}

std::vector<double> Steps(uint64_t seed, size_t n, double median, double sigma = 0.05) {
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> d(std::log(median), sigma);
  std::vector<double> v(n);
  for (double& x : v) x = d(rng);
  return v;
}

LoadedRun MakeRun(std::string given, report::Report r) {
  LoadedRun run;
  run.given = std::move(given);
  run.dir = "/runs/" + run.given;
  run.report = std::move(r);
  return run;
}

const report::Table& Gate(const Comparison& c) { return c.report.FindSection("gate")->tables[0]; }

std::string Cell(const report::Table& t, size_t row, const char* col) {
  return report::FormatMachine(t.rows[row][static_cast<size_t>(t.ColumnIndex(col))]);
}

TEST(CompareGateTest, AWholeIntervalBeyondTheBoundFailsAndNoiseDoesNot) {
  const std::vector<Bound> bounds = {*ParseBound("step_time > +3%"),
                                     *ParseBound("training_throughput < -3%")};
  const report::Report base = WithSteps(Steps(1, 300, 0.010));
  // Another draw of the same steps: within noise, both ways.
  auto same = BuildCompareReport(
      {MakeRun("a", base), MakeRun("b", WithSteps(Steps(2, 300, 0.010)))}, bounds);
  ASSERT_TRUE(same.ok()) << same.status().message();
  EXPECT_FALSE(same->gate_failed());
  EXPECT_EQ(Cell(Gate(*same), 0, "verdict"), "within noise");
  EXPECT_EQ(Cell(Gate(*same), 1, "verdict"), "within noise");
  // Steps 8 % longer: beyond noise for both figures.
  auto slow = BuildCompareReport(
      {MakeRun("a", base), MakeRun("b", WithSteps(Steps(3, 300, 0.0108)))}, bounds);
  ASSERT_TRUE(slow.ok());
  EXPECT_EQ(slow->bounds_crossed, 2);
  EXPECT_EQ(Cell(Gate(*slow), 0, "verdict"), "beyond noise");
  EXPECT_EQ(Cell(Gate(*slow), 0, "result"), "CROSSED");
  const double low = report::AsNumber(Gate(*slow).rows[0][7]);
  const double high = report::AsNumber(Gate(*slow).rows[0][8]);
  EXPECT_GT(low, 3.0);
  EXPECT_LT(low, 8.0);
  EXPECT_GT(high, 8.0);
  ASSERT_EQ(slow->verdicts.size(), 2u);
  EXPECT_NE(slow->verdicts[0].find("step_time > +3%: median change +"), std::string::npos)
      << slow->verdicts[0];
  EXPECT_NE(slow->verdicts[0].find(
                "(95 % CI, 300 + 300 steps, 1 + 1 runs; step-to-step noise only): beyond noise"),
            std::string::npos)
      << slow->verdicts[0];
}

TEST(CompareGateTest, AnIntervalAcrossTheBoundIsInconclusiveAndSaysTheRunsThatDecideIt) {
  const std::vector<Bound> bounds = {*ParseBound("step_time > +3%")};
  // Noisy steps exactly 3 % slower: the interval has the bound inside it.
  std::vector<double> slower = Steps(4, 60, 0.010, 0.1);
  for (double& s : slower) s *= 1.03;
  auto straddle = BuildCompareReport(
      {MakeRun("a", WithSteps(Steps(4, 60, 0.010, 0.1))), MakeRun("b", WithSteps(slower))}, bounds);
  ASSERT_TRUE(straddle.ok());
  EXPECT_FALSE(straddle->gate_failed());
  EXPECT_EQ(straddle->bounds_inconclusive, 1);
  EXPECT_EQ(Cell(Gate(*straddle), 0, "verdict"),
            "inconclusive (120 steps; the change sits too close to the bound for 50 runs a side "
            "to decide it)");
  // The further the change from the bound, the fewer runs decide it.
  auto runs_for = [&](double factor) {
    std::vector<double> cand = Steps(4, 60, 0.010, 0.1);
    for (double& s : cand) s *= factor;
    auto c = BuildCompareReport(
        {MakeRun("a", WithSteps(Steps(4, 60, 0.010, 0.1))), MakeRun("b", WithSteps(cand))}, bounds);
    const std::string v = Cell(Gate(*c), 0, "verdict");
    const size_t at = v.find("; about ");
    EXPECT_NE(at, std::string::npos) << v;
    return at == std::string::npos ? -1 : std::stoi(v.substr(at + 8));
  };
  const int near = runs_for(1.02), far = runs_for(1.0);
  EXPECT_GT(near, far);
  EXPECT_GE(far, 2);
  // Three steps a side: no 95 % interval at all, however large the change.
  auto tiny = BuildCompareReport({MakeRun("a", WithSteps({0.010, 0.011, 0.010})),
                                  MakeRun("b", WithSteps({0.02, 0.021, 0.02}))},
                                 bounds);
  ASSERT_TRUE(tiny.ok());
  EXPECT_FALSE(tiny->gate_failed());
  EXPECT_EQ(Cell(Gate(*tiny), 0, "verdict"), "no interval: too few steps for one (6 in all)");
  EXPECT_EQ(tiny->verdicts[0], "step_time > +3%: no interval: too few steps for one (6 in all)");
}

TEST(CompareGateTest, FiguresWithoutStepsAreGatedPlainly) {
  report::Report a = WithSteps(Steps(6, 100, 0.01)), b = WithSteps(Steps(7, 100, 0.01));
  a.AddMeta("peak_rss_bytes", 1e9);
  b.AddMeta("peak_rss_bytes", 1.05e9);
  auto c =
      BuildCompareReport({MakeRun("a", a), MakeRun("b", b)}, {*ParseBound("peak_memory > +1%")});
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->gate_failed());
  EXPECT_EQ(Cell(Gate(*c), 0, "verdict"), "crossed (plain: no per-step data)");
  EXPECT_EQ(Cell(Gate(*c), 0, "median_change_pct"), "");
}

TEST(CompareGateTest, PercentagesChangeInPercentagePoints) {
  // A data-loader share of 0.09 % against 33.4 %: 36,999 % more, and 33.3 pp.
  auto c = BuildCompareReport({MakeRun("a", WithSteps(Steps(8, 50, 0.01), 0.09)),
                               MakeRun("b", WithSteps(Steps(9, 50, 0.01), 33.4))},
                              {*ParseBound("dataloader_share > +5pp")});
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE(c->gate_failed());
  const report::Table& k = c->report.FindSection("key_figures")->tables[0];
  bool found = false;
  for (size_t i = 0; i < k.rows.size(); ++i) {
    if (Cell(k, i, "figure") != "Data-loader share of the step") continue;
    found = true;
    EXPECT_NEAR(report::AsNumber(k.rows[i][static_cast<size_t>(k.ColumnIndex("delta_B"))]), 33.31,
                1e-9);
    EXPECT_EQ(Cell(k, i, "delta_pct_B"), "");  // no "change in percent" of a percentage
  }
  EXPECT_TRUE(found);
  std::ostringstream text;
  report::TerminalRenderer().Render(c->report, text);
  EXPECT_NE(text.str().find("+33.3 pp"), std::string::npos) << text.str();
  EXPECT_EQ(text.str().find("36999"), std::string::npos);
  EXPECT_EQ(text.str().find("36,999"), std::string::npos);
  // A bound in % of a percentage is refused, naming the fix.
  EXPECT_EQ(ParseBound("dataloader_share > +5%").status().message(),
            "--fail-if 'dataloader_share > +5%': dataloader_share is a percentage: bound its "
            "change in percentage points, e.g. 'dataloader_share > +5pp'");
  EXPECT_FALSE(ParseBound("step_time > +5pp").ok());
  // ... also for SECTION.METRIC, once the unit is known.
  auto metric = BuildCompareReport({MakeRun("a", WithSteps({0.1})), MakeRun("b", WithSteps({0.1}))},
                                   {*ParseBound("speed.training_dataloader_wait_pct > 3%")});
  ASSERT_FALSE(metric.ok());
  EXPECT_NE(metric.status().message().find("is a percentage"), std::string::npos);
}

TEST(CompareGateTest, SetupDifferencesAreListedFirst) {
  report::Report a = WithSteps({0.1, 0.1}), b = WithSteps({0.1, 0.1});
  b.meta[0].value = std::string("Intel Xeon");  // host.cpu
  b.AddMeta("world_size", int64_t{2});
  auto c = BuildCompareReport({MakeRun("a", a), MakeRun("b", b)}, {});
  ASSERT_TRUE(c.ok());
  const report::Section& first = c->report.sections.front();
  EXPECT_EQ(first.id, "setup");
  const report::Table& t = first.tables[0];
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(Cell(t, 0, "key"), "ranks");
  EXPECT_EQ(Cell(t, 0, "run_B"), "2");
  EXPECT_EQ(Cell(t, 1, "key"), "host.cpu");
  ASSERT_EQ(c->warnings.size(), 2u);
  EXPECT_EQ(c->warnings[1],
            "the runs differ in more than the code: CPU AMD EPYC (A) vs Intel Xeon (B); every "
            "change below includes this difference");
  // The terminal shows them before any figure.
  std::ostringstream text;
  report::TerminalRenderer().Render(c->report, text);
  EXPECT_LT(text.str().find("Intel Xeon"), text.str().find("Key figures"));
}

TEST(CompareGateTest, APooledBaselineBringsItsRunToRunSpread) {
  LoadedRun base = MakeRun("last:3", WithSteps(Steps(10, 200, 0.0100)));
  base.pooled.push_back(MakeRun("p1", WithSteps(Steps(11, 200, 0.0104))));
  base.pooled.push_back(MakeRun("p2", WithSteps(Steps(12, 200, 0.0097))));
  // 4 % slower than the pooled median: the runs themselves move 3-4 %, so that is not beyond a
  // +1 % bound, although the steps alone say so.
  LoadedRun cand = MakeRun("b", WithSteps(Steps(13, 200, 0.0104)));
  auto c = BuildCompareReport({base, cand}, {*ParseBound("step_time > +1%")});
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->gate_failed());
  const report::Table& n = c->report.FindSection("noise")->tables[0];
  EXPECT_EQ(Cell(n, 0, "baseline_runs"), "3");
  EXPECT_EQ(Cell(n, 0, "baseline_steps"), "600");
  EXPECT_EQ(Cell(n, 0, "run_to_run"), "these runs (df 2)");
  auto alone = BuildCompareReport({MakeRun("a", WithSteps(Steps(10, 200, 0.0100))), cand},
                                  {*ParseBound("step_time > +1%")});
  ASSERT_TRUE(alone.ok());
  EXPECT_TRUE(alone->gate_failed());
  EXPECT_NE(c->report.FindSection("runs")->notes[0].find("A pools 3 runs"), std::string::npos);
}

// Real runs of this project's job, trimmed to their speed section (scripts/trim-run.py): four
// runs of one config made one after another (same1, same2, same3; shift between them), shift
// with data.delay_ms=4, a loader that spends 4 ms more on each ~8 ms step.
LoadedRun Recorded(const std::string& name) {
  const std::string dir = testutil::SourceDir() + "/tests/data/compare/" + name;
  auto r = report::ReadReportJson(dir + "/report.json");
  EXPECT_TRUE(r.ok()) << r.status().message();
  LoadedRun run = MakeRun(name, r.ok() ? *r : report::Report());
  run.dir = dir;
  return run;
}

TEST(CompareGateTest, RecordedRunsOfOneConfigStayWithinTheBound) {
  const std::vector<Bound> bounds = {*ParseBound("step_time > +3%"),
                                     *ParseBound("training_throughput < -3%")};
  auto pair = BuildCompareReport({Recorded("same1"), Recorded("same2")}, bounds);
  ASSERT_TRUE(pair.ok()) << pair.status().message();
  EXPECT_FALSE(pair->gate_failed()) << pair->verdicts[0];
  LoadedRun pooled = Recorded("same1");
  pooled.pooled.push_back(Recorded("same3"));
  auto with_spread = BuildCompareReport({pooled, Recorded("same2")}, bounds);
  ASSERT_TRUE(with_spread.ok());
  EXPECT_FALSE(with_spread->gate_failed()) << with_spread->verdicts[0];
  EXPECT_EQ(Cell(with_spread->report.FindSection("noise")->tables[0], 0, "run_to_run"),
            "these runs (df 1)");
}

TEST(CompareGateTest, ARecordedSlowdownIsBeyondNoise) {
  const std::vector<Bound> bounds = {*ParseBound("step_time > +3%"),
                                     *ParseBound("training_throughput < -3%")};
  auto c = BuildCompareReport({Recorded("same1"), Recorded("shift")}, bounds);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->bounds_crossed, 2) << c->verdicts[0];
  EXPECT_EQ(Cell(Gate(*c), 0, "verdict"), "beyond noise");
  // 4 ms more on each ~8 ms step: at least +40 %, and the interval is the estimate's.
  const report::Table& g = Gate(*c);
  const double change = report::AsNumber(g.rows[0][6]), low = report::AsNumber(g.rows[0][7]);
  EXPECT_GT(low, 40.0);
  EXPECT_LE(low, change);
  EXPECT_EQ(Cell(c->report.FindSection("noise")->tables[0], 0, "baseline_steps"), "195");
  // Against two baseline runs, whose own spread widens the interval: still beyond.
  LoadedRun pooled = Recorded("same1");
  pooled.pooled.push_back(Recorded("same3"));
  auto p = BuildCompareReport({pooled, Recorded("shift")}, bounds);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->bounds_crossed, 2) << p->verdicts[0];
}

// --- The run-to-run spread learnt from a generated history -------------------------------

// A run of one config on a machine whose runs wander: its median moves by a log-normal factor
// of sd `between`, its steps by `within` around that.
LoadedRun Wandering(std::mt19937_64& rng, const std::string& name, double median, double between,
                    double within = 0.05) {
  std::normal_distribution<double> run(0, between);
  return MakeRun(name, WithSteps(Steps(rng(), 200, median * std::exp(run(rng)), within)));
}

// The spread of `history` as the run history would give it.
RunSpread SpreadOf(const std::vector<LoadedRun>& history) {
  std::vector<RunNoise> noise;
  for (const LoadedRun& run : history) {
    noise.push_back(RunNoiseOf(internal::SideSteps(run).step_time_s[0]));
  }
  return EstimateRunSpread(noise, fmt::format("history: {} runs", history.size()));
}

// Unchanged reruns, 3 % apart from run to run: pairs gated on the steps alone fail a +3 % bound
// now and then; with the history's spread at most 2 of the 90 ordered pairs do (the documented
// rate is at most 2.5 %, the interval's one-sided error).
TEST(HistorySpreadGateTest, IdenticalConfigPairsPass) {
  std::mt19937_64 rng(31);
  std::vector<LoadedRun> history, reruns;
  for (int i = 0; i < 20; ++i) history.push_back(Wandering(rng, fmt::format("h{}", i), 0.01, 0.03));
  for (int i = 0; i < 10; ++i) reruns.push_back(Wandering(rng, fmt::format("r{}", i), 0.01, 0.03));
  const RunSpread spread = SpreadOf(history);
  EXPECT_NEAR(spread.sd, 0.03, 0.01);
  const std::vector<Bound> bounds = {*ParseBound("step_time > +3%")};
  int with_spread = 0, steps_only = 0;
  for (size_t i = 0; i < reruns.size(); ++i) {
    for (size_t j = 0; j < reruns.size(); ++j) {
      if (i == j) continue;
      auto c = BuildCompareReport({reruns[i], reruns[j]}, bounds, {spread});
      auto bare = BuildCompareReport({reruns[i], reruns[j]}, bounds);
      ASSERT_TRUE(c.ok() && bare.ok());
      with_spread += c->gate_failed() ? 1 : 0;
      steps_only += bare->gate_failed() ? 1 : 0;
      EXPECT_NE(c->verdicts[0].find("run-to-run spread from history: 20 runs"), std::string::npos)
          << c->verdicts[0];
    }
  }
  EXPECT_LE(with_spread, 2);
  EXPECT_GT(steps_only, 4);
}

// A true slowdown of twice the run-to-run spread (4 %) against a 0 % bound, ten runs a side (the
// pooled baseline of last:10 against --repeat 10): flagged in at least 9 of 10 trials.
TEST(HistorySpreadGateTest, AShiftOfTwiceTheSpreadIsFlagged) {
  std::mt19937_64 rng(32);
  std::vector<LoadedRun> history;
  for (int i = 0; i < 20; ++i) history.push_back(Wandering(rng, fmt::format("h{}", i), 0.01, 0.02));
  const RunSpread spread = SpreadOf(history);
  int flagged = 0;
  for (int trial = 0; trial < 10; ++trial) {
    LoadedRun base = Wandering(rng, "base", 0.01, 0.02),
              cand = Wandering(rng, "cand", 0.0104, 0.02);
    for (int k = 1; k < 10; ++k) {
      base.pooled.push_back(Wandering(rng, "b", 0.01, 0.02));
      cand.pooled.push_back(Wandering(rng, "c", 0.01 * std::exp(0.04), 0.02));
    }
    auto c = BuildCompareReport({base, cand}, {*ParseBound("step_time > +0%")}, {spread});
    ASSERT_TRUE(c.ok());
    flagged += c->gate_failed() ? 1 : 0;
  }
  EXPECT_GE(flagged, 9);
}

TEST(HistorySpreadGateTest, FewerThanThreeRunsKeepTheWarningAndSayHowManyMore) {
  std::mt19937_64 rng(33);
  const LoadedRun a = Wandering(rng, "a", 0.01, 0.02), b = Wandering(rng, "b", 0.01, 0.02);
  RunSpread two;
  two.runs = 2;
  auto c = BuildCompareReport({a, b}, {*ParseBound("step_time > +3%")}, {two});
  ASSERT_TRUE(c.ok());
  ASSERT_FALSE(c->warnings.empty());
  const std::string& w = c->warnings.back();
  EXPECT_NE(w.find("step-to-step noise only"), std::string::npos) << w;
  EXPECT_NE(w.find("record 1 more run of the baseline's config"), std::string::npos) << w;
  EXPECT_NE(w.find("(the history has 2)"), std::string::npos) << w;
  EXPECT_NE(c->verdicts[0].find("; step-to-step noise only)"), std::string::npos);
}

// The gate's "undecided": a bound with no interval at all (three steps a side), unlike one whose
// interval reaches across it.
TEST(HistorySpreadGateTest, TooFewStepsForAnIntervalAreCountedApart) {
  auto few = BuildCompareReport({MakeRun("a", WithSteps({0.010, 0.011, 0.012})),
                                 MakeRun("b", WithSteps({0.010, 0.011, 0.013}))},
                                {*ParseBound("step_time > +3%")});
  ASSERT_TRUE(few.ok());
  EXPECT_EQ(few->bounds_without_interval, 1);
  EXPECT_EQ(few->bounds_inconclusive, 1);
  std::vector<double> slower = Steps(4, 60, 0.010, 0.1);
  for (double& s : slower) s *= 1.03;
  auto across = BuildCompareReport(
      {MakeRun("a", WithSteps(Steps(3, 60, 0.010, 0.1))), MakeRun("b", WithSteps(slower))},
      {*ParseBound("step_time > +3%")});
  ASSERT_TRUE(across.ok());
  EXPECT_EQ(across->bounds_inconclusive, 1);
  EXPECT_EQ(across->bounds_without_interval, 0);
}

}  // namespace
}  // namespace trainprof::history
