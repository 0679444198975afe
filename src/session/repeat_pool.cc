#include "session/repeat_pool.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "base/stats.h"

namespace trainprof::session {
namespace {

using report::Unit;
using report::Value;

// One repeat's training steps after its warm-up.
struct Measured {
  std::vector<double> step_s;
  double samples = 0, wait_s = 0;
  int64_t steps = 0;  // all steps, warm-up included
};

double Cell(const std::vector<Value>& row, int col) {
  return col < 0 ? std::nan("") : report::AsNumber(row[static_cast<size_t>(col)]);
}

Measured MeasuredSteps(const report::Table& rate, double warmup) {
  Measured m;
  const int step = rate.ColumnIndex("step"), bps = rate.ColumnIndex("batches_per_s"),
            sps = rate.ColumnIndex("samples_per_s"), wait = rate.ColumnIndex("data_wait_s");
  for (const auto& row : rate.rows) {
    ++m.steps;
    const double per_s = Cell(row, bps);
    if (Cell(row, step) < warmup || !(per_s > 0)) continue;
    const double d = 1.0 / per_s;
    m.step_s.push_back(d);
    m.samples += Cell(row, sps) * d;
    const double w = Cell(row, wait);
    if (std::isfinite(w)) m.wait_s += w;
  }
  return m;
}

double Sum(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); }

double WarmupBatches(const report::Report& r) {
  for (const auto& [k, v] : r.config)
    if (k == "speed.warmup_batches") return report::AsNumber(v);
  return 0;
}

report::Section* FindSection(report::Report& r, const std::string& id) {
  for (report::Section& s : r.sections)
    if (s.id == id) return &s;
  return nullptr;
}

report::Table* FindTable(report::Section& s, const std::string& id) {
  for (report::Table& t : s.tables)
    if (t.id == id) return &t;
  return nullptr;
}

void SetCell(std::vector<Value>& row, int col, Value v) {
  if (col >= 0) row[static_cast<size_t>(col)] = std::move(v);
}

void SetMetric(report::Section& s, const std::string& key, double v) {
  for (report::Metric& m : s.metrics)
    if (m.key == key) m.value = v;
}

// The training row and metrics of the speed section, over the pooled steps.
void PoolSpeedFigures(report::Section& speed, const std::vector<Measured>& reps) {
  std::vector<double> all;
  double samples = 0, wait = 0;
  int64_t steps = 0;
  for (const Measured& m : reps) {
    all.insert(all.end(), m.step_s.begin(), m.step_s.end());
    samples += m.samples, wait += m.wait_s, steps += m.steps;
  }
  const double total = Sum(all), n = static_cast<double>(all.size());
  if (report::Table* t = FindTable(speed, "speed_report"); t != nullptr) {
    const int stage = t->ColumnIndex("stage");
    for (auto& row : t->rows) {
      const auto* name =
          stage >= 0 ? std::get_if<std::string>(&row[static_cast<size_t>(stage)]) : nullptr;
      if (name == nullptr || *name != "training" || all.empty()) continue;
      SetCell(row, t->ColumnIndex("steps"), steps);
      SetCell(row, t->ColumnIndex("measured_steps"), static_cast<int64_t>(all.size()));
      SetCell(row, t->ColumnIndex("mean_s"), total / n);
      SetCell(row, t->ColumnIndex("median_s"), base::Median(all));
      SetCell(row, t->ColumnIndex("min_s"), *std::min_element(all.begin(), all.end()));
      SetCell(row, t->ColumnIndex("max_s"), *std::max_element(all.begin(), all.end()));
      SetCell(row, t->ColumnIndex("batches_per_s"), n / total);
      SetCell(row, t->ColumnIndex("samples_per_s"), samples / total);
      SetCell(row, t->ColumnIndex("data_wait_pct"), 100 * wait / total);
    }
  }
  if (all.empty()) return;
  SetMetric(speed, "training_avg_throughput", n / total);
  SetMetric(speed, "training_avg_throughput_per_sample", samples / total);
  SetMetric(speed, "training_dataloader_wait_pct", 100 * wait / total);
}

// speed.training_rate with every repeat's rows and a `repeat` column.
void PoolRateTable(report::Table& rate, const std::vector<const report::Table*>& tables) {
  rate.columns.push_back({"repeat", "Repeat", Unit::kCount});
  rate.rows.clear();
  for (size_t i = 0; i < tables.size(); ++i) {
    for (const auto& row : tables[i]->rows) {
      std::vector<Value> r = row;
      r.resize(rate.columns.size());
      r.back() = static_cast<int64_t>(i + 1);
      rate.rows.push_back(std::move(r));
    }
  }
}

void RepeatsSection(report::Report& r, const std::vector<Measured>& reps) {
  report::Section& s =
      r.AddSection("repeats", fmt::format("Run-to-run variance ({} repeats)", reps.size()));
  report::Table& t = s.AddTable("repeats", "Each repeat (its own process)",
                                {{"repeat", "Repeat", Unit::kCount},
                                 {"measured_steps", "Steps", Unit::kCount},
                                 {"median_step_s", "Median step", Unit::kSeconds},
                                 {"mean_step_s", "Mean step", Unit::kSeconds},
                                 {"samples_per_s", "Samples/s", Unit::kPerSecond},
                                 {"data_wait_pct", "Data wait", Unit::kPercent},
                                 {"folder", "Folder"}});
  std::vector<double> medians;
  for (size_t i = 0; i < reps.size(); ++i) {
    const Measured& m = reps[i];
    const double total = Sum(m.step_s);
    medians.push_back(base::Median(m.step_s));
    t.rows.push_back({static_cast<int64_t>(i + 1), static_cast<int64_t>(m.step_s.size()),
                      medians.back(), total / static_cast<double>(m.step_s.size()),
                      m.samples / total, 100 * m.wait_s / total, fmt::format("repeat{}/", i + 1)});
  }
  const double mean = Sum(medians) / static_cast<double>(medians.size());
  double ss = 0;
  for (double m : medians) ss += (m - mean) * (m - mean);
  const double sd = std::sqrt(ss / static_cast<double>(medians.size() - 1));
  const auto [lo, hi] = std::minmax_element(medians.begin(), medians.end());
  s.AddMetric("repeats", "Repeats", static_cast<int64_t>(reps.size()), Unit::kCount);
  s.AddMetric("median_step_cv_pct", "Run-to-run spread of the median step (CV)", 100 * sd / mean,
              Unit::kPercent);
  s.AddMetric("median_step_range_pct", "Slowest against fastest repeat (median step)",
              100 * (*hi - *lo) / *lo, Unit::kPercent);
  s.notes.push_back(
      "each repeat ran in its own process; their steps are pooled in the speed section, and "
      "`trainprof compare` widens its interval by this spread (docs/ci.md)");
}

}  // namespace

StatusOr<report::Report> PoolRepeats(const std::vector<report::Report>& repeats,
                                     const std::string& run_dir) {
  if (repeats.size() < 2) return InvalidArgument("--repeat needs at least two repeats to pool");
  std::vector<const report::Table*> tables;
  std::vector<Measured> measured;
  for (size_t i = 0; i < repeats.size(); ++i) {
    const report::Table* rate = repeats[i].FindTable("speed", "training_rate");
    if (rate == nullptr) {
      return InvalidArgument(
          fmt::format("repeat {} has no per-step training times (speed.training_rate)", i + 1));
    }
    tables.push_back(rate);
    measured.push_back(MeasuredSteps(*rate, WarmupBatches(repeats[i])));
  }
  report::Report r = repeats.front();
  r.title += fmt::format(" ({} repeats)", repeats.size());
  for (report::MetaEntry& m : r.meta)
    if (m.key == "run_dir") m.value = run_dir;
  r.AddMeta("repeats", static_cast<int64_t>(repeats.size()));
  report::Section& speed = *FindSection(r, "speed");
  PoolRateTable(*FindTable(speed, "training_rate"), tables);
  PoolSpeedFigures(speed, measured);
  speed.notes.push_back(fmt::format(
      "training figures pool the steps of {} repeats (repeat1/ ... repeat{}/ hold each one's full "
      "report); the other sections are repeat 1's",
      repeats.size(), repeats.size()));
  RepeatsSection(r, measured);
  return r;
}

}  // namespace trainprof::session
