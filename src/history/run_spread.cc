#include "history/run_spread.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "history/key_figures.h"
#include "report/format.h"

namespace trainprof::history {
namespace {

using report::Unit;
using report::Value;

RunNoise NoiseOf(const RunRecord& r) {
  const double median = r.figures.Get("step_time_median");
  RunNoise n;
  if (median > 0 && std::isfinite(median)) n.log_median = std::log(median);
  n.log_sd = r.step_log_sd;
  n.steps = r.steps;
  return n;
}

std::vector<RunNoise> NoiseOf(const std::vector<const RunRecord*>& rows) {
  std::vector<RunNoise> out;
  for (const RunRecord* r : rows) out.push_back(NoiseOf(*r));
  return out;
}

std::string Where(const std::string& host, const std::string& device) {
  return fmt::format("{} ({})", host.empty() ? "an unnamed host" : host,
                     device.empty() ? "device not recorded" : device);
}

// The median of the finite values, NaN when none.
double MedianOf(std::vector<double> v) {
  std::erase_if(v, [](double x) { return !std::isfinite(x); });
  return Median(std::move(v));
}

// "4 (against 1 candidate run)", "--repeat 3 against last:3", or why no plan fits.
std::string PlanText(const RunPlan& p, const RunSpread& s) {
  if (!std::isfinite(s.sd)) {
    return fmt::format("unknown: {} more run{} needed", kMinSpreadRuns - s.runs,
                       kMinSpreadRuns - s.runs == 1 ? "" : "s");
  }
  if (p.baseline_runs == 0) {
    return fmt::format("not within {} runs a side (+/-{:.1f} % at best)", kMaxPlanRuns,
                       100 * p.half_width);
  }
  if (p.candidate_runs == 1) return fmt::format("last:{} against 1 run", p.baseline_runs);
  return fmt::format("--repeat {} against last:{}", p.candidate_runs, p.baseline_runs);
}

struct GroupKey {
  std::string config_hash, kind, host, device;
  auto operator<=>(const GroupKey&) const = default;
};

void AddSpreadRow(report::Table& t, const GroupKey& key, const std::vector<const RunRecord*>& rows,
                  double bound) {
  std::set<std::string> commits;
  std::vector<double> within, steps, medians;
  for (const RunRecord* r : rows) {
    commits.insert(r->git_commit);
    within.push_back(r->step_log_sd);
    steps.push_back(static_cast<double>(r->steps));
    medians.push_back(r->figures.Get("step_time_median"));
  }
  const RunSpread s = EstimateRunSpread(NoiseOf(rows), "");
  const double w = MedianOf(within), median = MedianOf(medians);
  const auto n = static_cast<int64_t>(MedianOf(steps));
  auto pct = [](double v) { return std::isfinite(v) ? Value(100 * v) : Value(); };
  t.rows.push_back({key.config_hash.substr(0, 8), key.kind, rows.front()->name, key.host,
                    key.device, static_cast<int64_t>(rows.size()),
                    static_cast<int64_t>(commits.size()),
                    std::isfinite(median) ? Value(median) : Value(), pct(s.sd), pct(w),
                    pct(GateHalfWidth(s, w, n, 1, 1)), pct(GateHalfWidth(s, w, n, 5, 1)),
                    PlanText(PlanRuns(s, w, n, bound), s)});
}

}  // namespace

RunSpread SpreadOfRecords(const std::vector<RunRecord>& rows, const SpreadQuery& q) {
  std::vector<const RunRecord*> same, at_commit;
  for (const RunRecord& r : rows) {
    if (r.host != q.host || r.device != q.device || same.size() == kSpreadRuns) continue;
    if (!q.exclude_dir.empty() && r.run_dir == q.exclude_dir) continue;
    same.push_back(&r);
    if (!q.commit.empty() && r.git_commit == q.commit) at_commit.push_back(&r);
  }
  const std::string where = Where(q.host, q.device);
  const std::string config = rows.empty() ? "" : rows.front().config_hash.substr(0, 8);
  if (static_cast<int64_t>(at_commit.size()) >= kMinSpreadRuns) {
    return EstimateRunSpread(NoiseOf(at_commit),
                             fmt::format("history: {} runs of config {} on {} at commit {}",
                                         at_commit.size(), config, where, q.commit.substr(0, 10)));
  }
  std::set<std::string> commits;
  for (const RunRecord* r : same) commits.insert(r->git_commit);
  return EstimateRunSpread(
      NoiseOf(same),
      fmt::format("history: {} runs of config {} on {}{}", same.size(), config, where,
                  commits.size() > 1 ? fmt::format(", across {} commits", commits.size()) : ""));
}

RunSpread HistorySpread(const RunDb& db, const report::Report& base, const std::string& commit,
                        const std::string& exclude_dir) {
  auto rows =
      db.List({.last = 0, .where = {"config_hash = " + ConfigHash(base), "kind = " + base.kind}});
  if (!rows.ok()) return {};
  return SpreadOfRecords(
      *rows, {report::MetaText(base, "host.name"), RunDevice(base), commit, exclude_dir});
}

report::Report NoiseReport(const std::vector<RunRecord>& rows, double bound,
                           const std::string& db_path) {
  std::map<GroupKey, std::vector<const RunRecord*>> groups;
  for (const RunRecord& r : rows) {
    auto& g = groups[{r.config_hash, r.kind, r.host, r.device}];
    if (g.size() < kSpreadRuns) g.push_back(&r);
  }
  report::Report out;
  out.kind = "noise";
  out.title = fmt::format("Run-to-run noise: {} ({} runs, {} configurations)", db_path, rows.size(),
                          groups.size());
  report::Section& s = out.AddSection("noise", "Run-to-run noise per configuration");
  const std::string need = fmt::format("Runs for +/-{:g} %", 100 * bound);
  report::Table& t = s.AddTable("noise", "Spread of the median step time between runs",
                                {{"config_hash", "Config"},
                                 {"kind", "Kind"},
                                 {"name", "Name"},
                                 {"host", "Host"},
                                 {"device", "Device"},
                                 {"runs", "Runs", Unit::kCount},
                                 {"commits", "Commits", Unit::kCount},
                                 {"step_time_median", "Median step", Unit::kSeconds},
                                 {"run_to_run_pct", "Run-to-run sd", Unit::kPercent},
                                 {"within_run_pct", "Step sd", Unit::kPercent},
                                 {"half_width_1_pct", "+/- 1 vs 1", Unit::kPercent},
                                 {"half_width_5_pct", "+/- last:5 vs 1", Unit::kPercent},
                                 {"runs_needed", need}});
  for (const auto& [key, group] : groups) AddSpreadRow(t, key, group, bound);
  if (t.rows.empty()) s.notes.push_back("No runs match.");
  t.notes.push_back(
      "run-to-run sd: between-run standard deviation of the log median step time, less what "
      "each run's own step noise explains (variance components; docs/ci.md); runs of one "
      "config hash, kind, host and device, the newest 30");
  t.notes.push_back(fmt::format(
      "+/-: the expected 95 % half-width of a gate's interval with that many runs; {}: the "
      "fewest runs whose interval is within +/-{:g} %: an unchanged run then fails a +{:g} % "
      "bound at most 2.5 % of the time, and a {:g} % slowdown fails it at least half the time",
      need, 100 * bound, 100 * bound, 200 * bound));
  return out;
}

}  // namespace trainprof::history
