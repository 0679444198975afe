#include "history/step_series.h"

#include <cmath>
#include <map>
#include <string>

#include "report/format.h"

namespace trainprof::history {
namespace {

double ConfigNumber(const report::Report& r, std::string_view key, double fallback) {
  for (const auto& [k, v] : r.config) {
    if (k != key) continue;
    const double x = report::AsNumber(v);
    return std::isfinite(x) ? x : fallback;
  }
  return fallback;
}

void ProfileSteps(const report::Report& r, StepSeries& out) {
  const report::Table* t = r.FindTable("speed", "training_rate");
  if (t == nullptr) return;
  const int step = t->ColumnIndex("step"), rate = t->ColumnIndex("batches_per_s"),
            samples = t->ColumnIndex("samples_per_s"), repeat = t->ColumnIndex("repeat");
  if (step < 0 || rate < 0 || samples < 0) return;
  const double warmup = ConfigNumber(r, "speed.warmup_batches", 0);
  std::map<int64_t, size_t> group_of;  // repeat number -> group
  for (const auto& row : t->rows) {
    if (report::AsNumber(row[static_cast<size_t>(step)]) < warmup) continue;
    const double per_s = report::AsNumber(row[static_cast<size_t>(rate)]);
    if (!(per_s > 0)) continue;
    const int64_t rep =
        repeat < 0 ? 0 : std::llround(report::AsNumber(row[static_cast<size_t>(repeat)]));
    auto [it, added] = group_of.emplace(rep, out.step_time_s.size());
    if (added) out.step_time_s.emplace_back(), out.samples_per_s.emplace_back();
    out.step_time_s[it->second].push_back(1.0 / per_s);
    out.samples_per_s[it->second].push_back(report::AsNumber(row[static_cast<size_t>(samples)]));
  }
}

void AnalyzeSteps(const report::Report& r, StepSeries& out) {
  const report::Table* t = r.FindTable("overview", "step_breakdown");
  if (t == nullptr) return;
  const int step = t->ColumnIndex("step"), time = t->ColumnIndex("step_time_s");
  if (step < 0 || time < 0) return;
  // Steps in order of first appearance, each the mean over the ranks that have it.
  std::map<std::string, size_t> index;
  std::vector<std::pair<double, int>> sums;
  // Many ranks' table is in its CSV only: its rows come block by block from its source.
  t->ForEachRowBlock([&](const std::vector<std::vector<report::Value>>& rows) {
    for (const auto& row : rows) {
      const double v = report::AsNumber(row[static_cast<size_t>(time)]);
      if (!(v > 0)) continue;
      const std::string key = report::FormatMachine(row[static_cast<size_t>(step)]);
      auto [it, added] = index.emplace(key, sums.size());
      if (added) sums.emplace_back(0.0, 0);
      sums[it->second].first += v;
      sums[it->second].second += 1;
    }
  });
  if (sums.empty()) return;
  out.step_time_s.emplace_back();
  for (const auto& [sum, n] : sums) out.step_time_s.back().push_back(sum / n);
}

}  // namespace

int64_t StepSeries::steps() const {
  int64_t n = 0;
  for (const auto& g : step_time_s) n += static_cast<int64_t>(g.size());
  return n;
}

StepSeries ExtractSteps(const report::Report& r) {
  StepSeries out;
  // A `run --traces` report has no speed section of its own: its steps are its traces'.
  if (r.kind != "analyze") ProfileSteps(r, out);
  if (out.step_time_s.empty()) AnalyzeSteps(r, out);
  return out;
}

}  // namespace trainprof::history
