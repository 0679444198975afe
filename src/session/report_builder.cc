#include "session/report_builder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string_view>

#include "report/format.h"

namespace trainprof::session {

using report::Column;
using report::Unit;
using report::Value;

void AddTimeSection(const TimeInput& in, report::Report& r) {
  report::Section& s = r.AddSection("time", "Time report");
  s.AddMetric("wall_time_s", "Wall time", in.wall_s, Unit::kSeconds);
  s.AddMetric("recorded_events", "Recorded scopes", in.recorded_events, Unit::kCount);
  s.AddMetric("actions", "Actions", static_cast<int64_t>(in.actions.size()), Unit::kCount);

  std::vector<Column> cols = {
      {"action", "Action", Unit::kText},    {"category", "Category", Unit::kText},
      {"calls", "Calls", Unit::kCount},     {"mean_s", "Mean", Unit::kSeconds},
      {"total_s", "Total", Unit::kSeconds}, {"pct_wall", "% wall", Unit::kPercent},
      {"min_s", "Min", Unit::kSeconds},     {"median_s", "Median", Unit::kSeconds},
      {"p95_s", "p95", Unit::kSeconds},     {"max_s", "Max", Unit::kSeconds}};
  report::Table& t = s.AddTable("time_report", "Time per action (sorted by total)", cols);
  t.charts.push_back({.kind = report::ChartKind::kBars,
                      .title = "Total time per action",
                      .label = "action",
                      .values = {"total_s"},
                      .limit = 15});
  auto pct = [&](double x) { return in.wall_s > 0 ? 100.0 * x / in.wall_s : 0.0; };
  int64_t shown = 0, calls = 0;
  struct CategoryAcc {
    int64_t actions = 0, calls = 0;
    double total_s = 0;
  };
  std::map<std::string, CategoryAcc> categories;
  for (const record::ActionStats& a : in.actions) {
    calls += a.time.count;
    if (!a.category.empty()) {
      CategoryAcc& c = categories[a.category];
      ++c.actions;
      c.calls += a.time.count;
      c.total_s += a.time.total_s;
    }
    if (!in.verbose && !record::InConciseSet(a)) continue;
    ++shown;
    t.rows.push_back({a.name, a.category.empty() ? Value(std::string("-")) : Value(a.category),
                      a.time.count, a.time.mean_s, a.time.total_s, pct(a.time.total_s),
                      a.time.min_s, a.time.median_s, a.time.p95_s, a.time.max_s});
  }
  t.footer.push_back({std::string("Total"), std::string("-"), calls, Value(), in.wall_s, 100.0,
                      Value(), Value(), Value(), Value()});
  if (!in.verbose && shown < static_cast<int64_t>(in.actions.size())) {
    t.notes.push_back(fmt::format(
        "time.verbose is false: showing the concise set, {} of {} actions (loops, data loader, "
        "forward, backward, optimizer step, and top-level actions); set time.verbose: true for all",
        shown, in.actions.size()));
  }
  t.notes.push_back(
      "% wall: share of the session's wall time; nested actions overlap, so the "
      "shares do not add up to 100 %");

  if (categories.empty()) return;
  report::Table& c = s.AddTable("time_by_category", "Time per category",
                                {{"category", "Category", Unit::kText},
                                 {"actions", "Actions", Unit::kCount},
                                 {"calls", "Calls", Unit::kCount},
                                 {"total_s", "Total", Unit::kSeconds},
                                 {"pct_wall", "% wall", Unit::kPercent}});
  std::vector<std::pair<std::string, CategoryAcc>> sorted(categories.begin(), categories.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a.second.total_s > b.second.total_s;
  });
  for (const auto& [name, acc] : sorted) {
    c.rows.push_back({name, acc.actions, acc.calls, acc.total_s, pct(acc.total_s)});
  }
  c.notes.push_back(
      "category: the [Category] prefix of the action name, as Lightning names its "
      "loops' actions; actions without one are not counted here");
}

namespace {

// "training waited for data 38.1 % of each step ..." with the workers that would hide the wait:
// a loader of W workers (W = 0: the loop fetches itself) that keeps the loop waiting produces a
// batch in P = W * step time (P = the wait when W = 0), so hiding it behind C = step - wait of
// compute needs ceil(P / C) workers, each with a core to run on.
void AddDataWaitFinding(const record::StageSpeed& st, int64_t workers, report::Section& s) {
  if (st.measured_steps == 0 || st.data_wait_pct <= kDataWaitFindingPct) return;
  const double n = static_cast<double>(st.measured_steps);
  const double step = st.mean_step_s, wait = st.data_wait_s / n, compute = step - wait;
  std::string advice;
  if (workers >= 0 && compute > 0) {
    const double produce = workers == 0 ? wait : static_cast<double>(workers) * step;
    const auto need =
        std::max<int64_t>(workers + 1, static_cast<int64_t>(std::ceil(produce / compute)));
    advice = fmt::format(
        "try num_workers >= {} (now {}; each needs a free core) or a packed "
        "format read with one read per batch",
        need, workers);
  } else {
    advice = "try more data-loader workers or a packed format read with one read per batch";
  }
  s.findings.push_back(
      {report::Severity::kWarning,
       fmt::format("the training loop waited for data {:.1f} % of each step ({} of {} per step, "
                   "over {} measured steps); {}",
                   st.data_wait_pct, report::FormatHuman(wait, Unit::kSeconds),
                   report::FormatHuman(step, Unit::kSeconds), st.measured_steps, advice)});
}

}  // namespace

void AddSpeedSection(const SpeedInput& in, report::Report& r) {
  const record::SpeedStats& sp = in.speed;
  const int64_t warmup_batches = in.warmup_batches;
  report::Section& s = r.AddSection("speed", "Speed report");
  auto metric = [&](const char* key, const char* title, double v, const char* suffix, bool have) {
    s.AddMetric(key, title, have ? Value(v) : Value(), Unit::kPerSecond, suffix);
  };
  bool tr = sp.train.measured_steps > 0, va = sp.validation.measured_steps > 0;
  metric("training_avg_throughput", "Training throughput", sp.train.batches_per_s, "batches/s", tr);
  metric("training_avg_throughput_per_sample", "Training throughput per sample",
         sp.train.samples_per_s, "samples/s", tr);
  metric("validation_avg_throughput", "Validation throughput", sp.validation.batches_per_s,
         "batches/s", va);
  metric("validation_avg_throughput_per_sample", "Validation throughput per sample",
         sp.validation.samples_per_s, "samples/s", va);
  bool tl = sp.train_loader.fetches > 0, vl = sp.validation_loader.fetches > 0;
  metric("avg_training_dataloader_throughput", "Training data loader throughput",
         sp.train_loader.batches_per_s, "batches/s", tl);
  metric("avg_training_dataloader_throughput_per_sample",
         "Training data loader throughput per sample", sp.train_loader.samples_per_s, "samples/s",
         tl);
  metric("avg_validation_dataloader_throughput", "Validation data loader throughput",
         sp.validation_loader.batches_per_s, "batches/s", vl);
  metric("avg_validation_dataloader_throughput_per_sample",
         "Validation data loader throughput per sample", sp.validation_loader.samples_per_s,
         "samples/s", vl);
  auto pct = [&](const char* key, const char* title, double v, bool have) {
    s.AddMetric(key, title, have ? Value(v) : Value(), Unit::kPercent, "of step time");
  };
  pct("training_dataloader_wait_pct", "Training time waiting for data", sp.train.data_wait_pct,
      tr && tl);
  pct("validation_dataloader_wait_pct", "Validation time waiting for data",
      sp.validation.data_wait_pct, va && vl);
  if (sp.train.communication_s > 0) {
    pct("training_communication_pct", "Training time in communication", sp.train.communication_pct,
        tr);
    s.AddMetric("training_communication_s", "Training communication time", sp.train.communication_s,
                Unit::kSeconds, "in measured steps");
  }

  report::Table& t = s.AddTable("speed_report", "Throughput per stage",
                                {{"stage", "Stage", Unit::kText},
                                 {"steps", "Steps", Unit::kCount},
                                 {"measured_steps", "Measured", Unit::kCount},
                                 {"mean_s", "Mean time", Unit::kSeconds},
                                 {"median_s", "Median", Unit::kSeconds},
                                 {"min_s", "Min", Unit::kSeconds},
                                 {"max_s", "Max", Unit::kSeconds},
                                 {"batches_per_s", "Batches/s", Unit::kPerSecond},
                                 {"samples_per_s", "Samples/s", Unit::kPerSecond},
                                 {"data_wait_pct", "Data wait", Unit::kPercent}});
  auto stage_row = [&](const char* name, const record::StageSpeed& st, bool have_loader) {
    if (st.steps == 0) return;
    auto m = [&](double v) { return st.measured_steps > 0 ? Value(v) : Value(); };
    t.rows.push_back({std::string(name), st.steps, st.measured_steps, m(st.mean_step_s),
                      m(st.median_step_s), m(st.min_step_s), m(st.max_step_s), m(st.batches_per_s),
                      m(st.samples_per_s), have_loader ? m(st.data_wait_pct) : Value()});
  };
  auto loader_row = [&](const char* name, const record::LoaderSpeed& l) {
    if (l.fetches == 0) return;
    t.rows.push_back({std::string(name), l.fetches, l.fetches, l.mean_fetch_s, Value(), Value(),
                      Value(), l.batches_per_s, l.samples_per_s, Value()});
  };
  stage_row("training", sp.train, tl);
  stage_row("validation", sp.validation, vl);
  loader_row("training data loader", sp.train_loader);
  loader_row("validation data loader", sp.validation_loader);
  t.notes.push_back(fmt::format(
      "stages: the first {} steps of each stage are warm-up and left out of the averages "
      "(speed.warmup_batches); data loaders: 1 / mean time the loop waited for a batch, over "
      "recorded steps; data wait: that time's share of the measured steps' wall time",
      warmup_batches));
  AddDataWaitFinding(sp.train, in.loader_workers, s);
  if (sp.train.steps > 0 && sp.train.measured_steps == 0) {
    s.findings.push_back({report::Severity::kWarning,
                          fmt::format("only {} training steps ran, all warm-up: no training "
                                      "throughput; lower speed.warmup_batches or run longer",
                                      sp.train.steps)});
  }
  AddRateSeries(s, "training_rate", "Training throughput per step", sp.training_rate);
  AddRateSeries(s, "validation_rate", "Validation throughput per step", sp.validation_rate);
  AddSpeedCharts(s);
}

void AddSpeedCharts(report::Section& s) {
  auto measured = [](const report::Table& t, std::string_view key) {
    const int c = t.ColumnIndex(key);
    return c >= 0 && std::ranges::any_of(t.rows, [&](const std::vector<Value>& row) {
             return std::isfinite(report::AsNumber(row[c]));
           });
  };
  // One line per stage that ran, in one chart; samples/s unless a stage lacks it (no batch size
  // given), then batches/s for every line.
  std::vector<std::pair<report::Table*, const char*>> stages;
  bool samples = true;
  for (auto [id, name] :
       {std::pair{"training_rate", "training"}, {"validation_rate", "validation"}}) {
    for (report::Table& t : s.tables) {
      if (t.id != id || t.rows.empty()) continue;
      stages.emplace_back(&t, name);
      samples = samples && measured(t, "samples_per_s");
    }
  }
  const char* unit = samples ? "samples/s" : "batches/s";
  for (auto [t, name] : stages) {
    t->charts.push_back({.kind = report::ChartKind::kLines,
                         .id = "throughput",
                         .title = fmt::format("Throughput over time ({})", unit),
                         .label = "time_s",
                         .values = {samples ? "samples_per_s" : "batches_per_s"},
                         .names = {name},
                         .y_suffix = unit});
  }
  for (report::Table& t : s.tables) {
    // Only when the run measured the wait (a loop without a data-loader scope has none).
    if (t.id != "training_rate" || !measured(t, "data_wait_s")) continue;
    t.charts.push_back({.kind = report::ChartKind::kBars,
                        .id = "dataloader_wait",
                        .title = "Data-loader wait per training step",
                        .label = "step",
                        .values = {"data_wait_s"},
                        .names = {"data wait"},
                        .limit = 0,
                        .horizontal = false});
  }
}

void AddRateSeries(report::Section& s, const std::string& id, const std::string& title,
                   const std::vector<record::RatePoint>& points) {
  report::Table& t = s.AddTable(id, title,
                                {{"step", "Step", Unit::kCount},
                                 {"epoch", "Epoch", Unit::kCount},
                                 {"time_s", "Time", Unit::kSeconds},
                                 {"batches_per_s", "Batches/s", Unit::kPerSecond},
                                 {"samples_per_s", "Samples/s", Unit::kPerSecond},
                                 {"data_wait_s", "Data wait", Unit::kSeconds}},
                                report::TableKind::kSeries);
  for (const record::RatePoint& p : points) {
    t.rows.push_back({p.step, p.epoch, p.t_s, p.batches_per_s, p.samples_per_s, p.data_wait_s});
  }
}

}  // namespace trainprof::session
