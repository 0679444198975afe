#include "session/report_builder.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

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
      {"action", "Action", Unit::kText},          {"category", "Category", Unit::kText},
      {"calls", "Calls", Unit::kCount},            {"mean_s", "Mean", Unit::kSeconds},
      {"total_s", "Total", Unit::kSeconds},        {"pct_wall", "% wall", Unit::kPercent},
      {"min_s", "Min", Unit::kSeconds},            {"median_s", "Median", Unit::kSeconds},
      {"p95_s", "p95", Unit::kSeconds},            {"max_s", "Max", Unit::kSeconds}};
  report::Table& t = s.AddTable("time_report", "Time per action (sorted by total)", cols);
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
  t.notes.push_back("% wall: share of the session's wall time; nested actions overlap, so the "
                    "shares do not add up to 100 %");

  if (categories.empty()) return;
  report::Table& c = s.AddTable("time_by_category", "Time per category",
                                {{"category", "Category", Unit::kText},
                                 {"actions", "Actions", Unit::kCount},
                                 {"calls", "Calls", Unit::kCount},
                                 {"total_s", "Total", Unit::kSeconds},
                                 {"pct_wall", "% wall", Unit::kPercent}});
  std::vector<std::pair<std::string, CategoryAcc>> sorted(categories.begin(), categories.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second.total_s > b.second.total_s; });
  for (const auto& [name, acc] : sorted) {
    c.rows.push_back({name, acc.actions, acc.calls, acc.total_s, pct(acc.total_s)});
  }
  c.notes.push_back("category: the [Category] prefix of the action name, as Lightning names its "
                    "loops' actions; actions without one are not counted here");
}

namespace {

void AddRateSeries(report::Section& s, const std::string& id, const std::string& title,
                   const std::vector<record::RatePoint>& points) {
  report::Table& t = s.AddTable(id, title,
                                {{"step", "Step", Unit::kCount},
                                 {"epoch", "Epoch", Unit::kCount},
                                 {"time_s", "Time", Unit::kSeconds},
                                 {"batches_per_s", "Batches/s", Unit::kPerSecond},
                                 {"samples_per_s", "Samples/s", Unit::kPerSecond}},
                                report::TableKind::kSeries);
  for (const record::RatePoint& p : points) {
    t.rows.push_back({p.step, p.epoch, p.t_s, p.batches_per_s, p.samples_per_s});
  }
}

}  // namespace

void AddSpeedSection(const record::SpeedStats& sp, int64_t warmup_batches, report::Report& r) {
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

  report::Table& t = s.AddTable("speed_report", "Throughput per stage",
                                {{"stage", "Stage", Unit::kText},
                                 {"steps", "Steps", Unit::kCount},
                                 {"measured_steps", "Measured", Unit::kCount},
                                 {"mean_s", "Mean time", Unit::kSeconds},
                                 {"batches_per_s", "Batches/s", Unit::kPerSecond},
                                 {"samples_per_s", "Samples/s", Unit::kPerSecond}});
  auto stage_row = [&](const char* name, const record::StageSpeed& st) {
    if (st.steps == 0) return;
    bool m = st.measured_steps > 0;
    t.rows.push_back({std::string(name), st.steps, st.measured_steps,
                      m ? Value(st.mean_step_s) : Value(), m ? Value(st.batches_per_s) : Value(),
                      m ? Value(st.samples_per_s) : Value()});
  };
  auto loader_row = [&](const char* name, const record::LoaderSpeed& l) {
    if (l.fetches == 0) return;
    t.rows.push_back({std::string(name), l.fetches, l.fetches, l.mean_fetch_s, l.batches_per_s,
                      l.samples_per_s});
  };
  stage_row("training", sp.train);
  stage_row("validation", sp.validation);
  loader_row("training data loader", sp.train_loader);
  loader_row("validation data loader", sp.validation_loader);
  t.notes.push_back(fmt::format(
      "stages: the first {} steps of each stage are warm-up and left out of the averages "
      "(speed.warmup_batches); data loaders: 1 / mean time to fetch a batch, over recorded steps",
      warmup_batches));
  if (sp.train.steps > 0 && sp.train.measured_steps == 0) {
    s.findings.push_back({report::Severity::kWarning,
                          fmt::format("only {} training steps ran, all warm-up: no training "
                                      "throughput; lower speed.warmup_batches or run longer",
                                      sp.train.steps)});
  }
  AddRateSeries(s, "training_rate", "Training throughput per step", sp.training_rate);
  AddRateSeries(s, "validation_rate", "Validation throughput per step", sp.validation_rate);
}

}  // namespace trainprof::session
