#include "report/html_views.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string_view>

#include "report/format.h"
#include "report/svg.h"

namespace trainprof::report::html {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

template <typename C>
void Add(std::vector<Chart>& out, const C& chart) {
  out.push_back({chart.title, svg::Render(chart)});
}

double At(const std::vector<Value>& row, int col) {
  return col >= 0 && static_cast<size_t>(col) < row.size() ? AsNumber(row[col]) : kNaN;
}

std::string Text(const std::vector<Value>& row, int col) {
  if (col < 0 || static_cast<size_t>(col) >= row.size()) return "";
  if (const auto* s = std::get_if<std::string>(&row[col])) return *s;
  return FormatHuman(row[col], Unit::kNumber);
}

bool AnyFinite(const std::vector<double>& v) {
  return std::ranges::any_of(v, [](double d) { return std::isfinite(d); });
}

svg::Line Series(const Table& t, int x, int y, std::string label) {
  svg::Line l{std::move(label), {}, {}};
  l.x.reserve(t.rows.size());
  l.y.reserve(t.rows.size());
  for (const auto& row : t.rows) {
    l.x.push_back(At(row, x));
    l.y.push_back(At(row, y));
  }
  return l;
}

// One bar per row: label from `label_col`, value from `value_col`; the `limit` largest rows.
svg::BarChart RowBars(const Table& t, std::string id, std::string title, int label_col,
                      int value_col, size_t limit) {
  svg::BarChart c{.id = std::move(id),
                  .title = std::move(title),
                  .unit = t.columns[value_col].unit,
                  .horizontal = true};
  c.segments = {t.columns[value_col].title};
  std::vector<std::pair<double, std::string>> rows;
  for (const auto& row : t.rows) {
    double v = At(row, value_col);
    if (std::isfinite(v)) rows.emplace_back(v, Text(row, label_col));
  }
  std::ranges::stable_sort(rows, [](const auto& a, const auto& b) { return a.first > b.first; });
  if (rows.size() > limit) rows.resize(limit);
  for (auto& [v, label] : rows) {
    c.bars.push_back(label.empty() ? "-" : label);
    c.values.push_back({v});
  }
  return c;
}

void Speed(const Section& s, std::vector<Chart>& out) {
  // One line per stage that ran; samples/s unless a stage lacks it (no batch size given), then
  // batches/s for every line.
  std::vector<std::pair<const Table*, const char*>> stages;
  bool samples = true;
  for (auto [id, label] :
       {std::pair{"training_rate", "training"}, std::pair{"validation_rate", "validation"}}) {
    const Table* t = s.FindTable(id);
    if (t == nullptr || t->rows.empty()) continue;
    stages.emplace_back(t, label);
    samples = samples && AnyFinite(Series(*t, 0, t->ColumnIndex("samples_per_s"), "").y);
  }
  const char* unit = samples ? "samples/s" : "batches/s";
  svg::LineChart tp{.id = "throughput",
                    .title = fmt::format("Throughput over time ({})", unit),
                    .y_unit = Unit::kPerSecond,
                    .y_suffix = unit};
  for (auto [t, label] : stages) {
    tp.lines.push_back(Series(*t, t->ColumnIndex("time_s"),
                              t->ColumnIndex(samples ? "samples_per_s" : "batches_per_s"), label));
  }
  if (!tp.lines.empty()) Add(out, tp);
  if (const Table* t = s.FindTable("training_rate")) {
    const int step = t->ColumnIndex("step"), wait = t->ColumnIndex("data_wait_s");
    svg::BarChart c{.id = "dataloader_wait",
                    .title = "Data-loader wait per training step",
                    .unit = Unit::kSeconds};
    c.segments = {"data wait"};
    for (const auto& row : t->rows) {
      c.bars.push_back(Text(row, step));
      c.values.push_back({At(row, wait)});
    }
    // Only when the run measured the wait (a loop without a data-loader scope has none).
    const bool measured = std::ranges::any_of(
        c.values, [](const std::vector<double>& v) { return std::isfinite(v[0]); });
    if (wait >= 0 && measured) Add(out, c);
  }
}

void Memory(const Section& s, std::vector<Chart>& out) {
  const Table* t = s.FindTable("memory_timeline");
  if (t == nullptr) return;
  const int time = t->ColumnIndex("time_s"), dev = t->ColumnIndex("device");
  std::map<std::string, std::pair<svg::Line, svg::Line>> by_device;  // allocated, reserved
  for (const auto& row : t->rows) {
    auto& [alloc, reserved] = by_device[Text(row, dev)];
    alloc.x.push_back(At(row, time));
    alloc.y.push_back(At(row, t->ColumnIndex("allocated_bytes")));
    reserved.x.push_back(alloc.x.back());
    reserved.y.push_back(At(row, t->ColumnIndex("reserved_bytes")));
  }
  svg::LineChart c{.id = "memory_timeline",
                   .title = "Memory timeline (allocated, peak marked)",
                   .y_unit = Unit::kBytes,
                   .mark_peak = true};
  for (auto& [device, lines] : by_device) {
    lines.first.label = device + " allocated";
    c.lines.push_back(std::move(lines.first));
    if (AnyFinite(lines.second.y)) {
      lines.second.label = device + " reserved";
      c.lines.push_back(std::move(lines.second));
    }
  }
  Add(out, c);
}

// Line charts of system_timeseries: each group's columns, when the run sampled them.
void System(const Section& s, std::vector<Chart>& out) {
  const Table* t = s.FindTable("system_timeseries");
  if (t == nullptr) return;
  struct Group {
    const char* id;
    const char* title;
    bool (*match)(std::string_view key, Unit unit);
  };
  static const Group kGroups[] = {
      {"system_cpu", "CPU utilization",
       [](std::string_view k, Unit) {
         return k == "cpu_utilization_percent" || k == "process_cpu_percent";
       }},
      {"system_memory", "Memory used",
       [](std::string_view k, Unit) {
         return k == "system_memory_used_bytes" || k == "process_rss_bytes";
       }},
      {"system_gpu_utilization", "GPU utilization",
       [](std::string_view k, Unit) {
         return k.starts_with("gpu") && k.ends_with("_utilization_percent") &&
                !k.starts_with("gpu_avg");
       }},
      {"system_gpu_memory", "GPU memory used",
       [](std::string_view k, Unit) {
         return k.starts_with("gpu") && k.ends_with("_memory_used_bytes") &&
                !k.starts_with("gpu_avg");
       }},
      {"system_power", "Power",
       [](std::string_view k, Unit u) { return u == Unit::kWatts && !k.starts_with("gpu_avg"); }},
      {"system_io", "Disk and network",
       [](std::string_view k, Unit) {
         return k == "disk_read_bytes_per_s" || k == "disk_write_bytes_per_s" ||
                k == "network_receive_bytes_per_s" || k == "network_transmit_bytes_per_s";
       }},
  };
  const int time = t->ColumnIndex("time_s");
  for (const Group& g : kGroups) {
    svg::LineChart c{.id = g.id, .title = g.title};
    for (size_t i = 0; i < t->columns.size(); ++i) {
      const Column& col = t->columns[i];
      if (!g.match(col.key, col.unit)) continue;
      svg::Line l = Series(*t, time, static_cast<int>(i), col.title);
      if (!AnyFinite(l.y)) continue;
      c.y_unit = col.unit;
      c.lines.push_back(std::move(l));
    }
    if (!c.lines.empty()) Add(out, c);
  }
}

// Per-step categories (the overview's, the distributed view's), one stacked bar per rank and
// step.
void StepBreakdown(const Section& s, std::vector<Chart>& out, const char* id = "step_breakdown",
                   const char* title = "Step time breakdown per step") {
  const Table* t = s.FindTable(id);
  if (t == nullptr) return;
  svg::BarChart c{.id = id, .title = title, .unit = Unit::kSeconds};
  std::vector<int> cols;
  for (size_t i = 0; i < t->columns.size(); ++i) {
    const Column& col = t->columns[i];
    if (col.unit == Unit::kSeconds && col.key != "step_time_s") {
      cols.push_back(static_cast<int>(i));
      c.segments.push_back(col.title);
    }
  }
  const int rank = t->ColumnIndex("rank"), step = t->ColumnIndex("step");
  std::set<std::string> ranks;
  for (const auto& row : t->rows) ranks.insert(Text(row, rank));
  for (const auto& row : t->rows) {
    // "ProfilerStep#12" -> "#12": the axis has room for a dozen characters a label, and every
    // label began with the same ones.
    std::string name = Text(row, step);
    if (name.starts_with("ProfilerStep#")) name = name.substr(12);
    c.bars.push_back(ranks.size() > 1 ? fmt::format("r{} {}", Text(row, rank), name) : name);
    std::vector<double> v;
    for (int col : cols) v.push_back(At(row, col));
    c.values.push_back(std::move(v));
  }
  if (!c.bars.empty()) Add(out, c);
}

void Hta(const Section& s, std::vector<Chart>& out) {
  if (const Table* t = s.FindTable("idle_time_breakdown")) {
    svg::BarChart c{.id = "idle_time_breakdown",
                    .title = "GPU idle time per rank and stream",
                    .unit = Unit::kSeconds,
                    .horizontal = true};
    const int cols[] = {t->ColumnIndex("host_wait_s"), t->ColumnIndex("kernel_wait_s"),
                        t->ColumnIndex("other_s")};
    for (int col : cols) c.segments.push_back(col >= 0 ? t->columns[col].title : "?");
    for (const auto& row : t->rows) {
      c.bars.push_back(fmt::format("rank {} stream {}", Text(row, t->ColumnIndex("rank")),
                                   Text(row, t->ColumnIndex("stream"))));
      c.values.push_back({At(row, cols[0]), At(row, cols[1]), At(row, cols[2])});
    }
    if (!c.bars.empty() && c.bars.size() <= 64) Add(out, c);
  }
}

void Ranks(const Section& s, std::vector<Chart>& out) {
  const Table* t = s.FindTable("rank_summary");
  if (t == nullptr || t->rows.size() < 2) return;
  svg::BarChart c{.id = "rank_median_step",
                  .title = "Median training step per rank",
                  .unit = Unit::kSeconds,
                  .horizontal = true};
  c.segments = {"median step"};
  std::set<size_t> hot = HighlightedRows(s, *t);
  for (size_t i = 0; i < t->rows.size(); ++i) {
    c.bars.push_back(fmt::format("rank {}", Text(t->rows[i], t->ColumnIndex("rank"))));
    c.values.push_back({At(t->rows[i], t->ColumnIndex("median_step_s"))});
    c.highlight.push_back(hot.count(i) > 0);
  }
  Add(out, c);
}

// `trainprof compare`: each key figure's (or bound's) change in percent against the baseline, a
// crossed bound in red.
void CompareBars(const Section& s, std::vector<Chart>& out) {
  if (s.tables.empty()) return;
  const Table& t = s.tables.front();
  int pct = -1;
  for (size_t i = 0; i < t.columns.size(); ++i)
    if (t.columns[i].key.starts_with("delta_pct_") || t.columns[i].key == "change_pct")
      pct = static_cast<int>(i);  // the last: the candidate's change
  if (pct < 0 || t.rows.empty()) return;
  const int result = t.ColumnIndex("result");
  svg::BarChart c{.id = s.id + "_change", .unit = Unit::kPercent, .horizontal = true};
  c.title = fmt::format("{} against the baseline", t.columns[pct].title);
  c.segments = {"change"};
  for (const auto& row : t.rows) {
    c.bars.push_back(Text(row, 0));
    c.values.push_back({At(row, pct)});
    c.highlight.push_back(Text(row, result) == "CROSSED");
  }
  Add(out, c);
}

// A series table no view above knows: its first column against the numeric columns that share
// the first one's unit (at most 6).
void GenericSeries(const Table& t, std::vector<Chart>& out) {
  if (t.columns.size() < 2 || t.rows.empty()) return;
  svg::LineChart c{.id = t.id, .title = t.title, .x_unit = t.columns[0].unit};
  for (size_t i = 1; i < t.columns.size() && c.lines.size() < 6; ++i) {
    const Unit u = t.columns[i].unit;
    if (u == Unit::kText || u == Unit::kBool || u == Unit::kByRow) continue;
    if (!c.lines.empty() && u != c.y_unit) continue;
    svg::Line l = Series(t, 0, static_cast<int>(i), t.columns[i].title);
    if (!AnyFinite(l.y)) continue;
    c.y_unit = u;
    c.lines.push_back(std::move(l));
  }
  if (!c.lines.empty()) Add(out, c);
}

// The chart a table's builder asked for (Table::chart).
void Hinted(const Table& t, std::vector<Chart>& out) {
  const ChartHint& h = t.chart;
  const std::string title = h.title.empty() ? t.title : h.title;
  const int label = t.ColumnIndex(h.label);
  std::vector<int> cols;
  for (const std::string& k : h.values)
    if (int c = t.ColumnIndex(k); c >= 0) cols.push_back(c);
  if (label < 0 || cols.empty()) return;
  if (h.kind == ChartKind::kLines) {
    if (t.rows.empty()) return;
    svg::LineChart c{.id = t.id, .title = title, .x_unit = t.columns[label].unit};
    c.y_unit = t.columns[cols[0]].unit;
    for (int col : cols) c.lines.push_back(Series(t, label, col, t.columns[col].title));
    Add(out, c);
    return;
  }
  svg::BarChart c{.id = t.id, .title = title, .unit = t.columns[cols[0]].unit, .horizontal = true};
  for (int col : cols) c.segments.push_back(t.columns[col].title);
  std::vector<std::pair<double, size_t>> order;
  for (size_t r = 0; r < t.rows.size(); ++r) {
    double sum = 0;
    for (int col : cols) sum += std::isfinite(At(t.rows[r], col)) ? At(t.rows[r], col) : 0;
    order.emplace_back(sum, r);
  }
  // The largest by magnitude: a change (diff's deltas) counts as much when it is negative.
  std::ranges::stable_sort(
      order, [](const auto& a, const auto& b) { return std::abs(a.first) > std::abs(b.first); });
  if (order.size() > h.limit) order.resize(h.limit);
  for (const auto& [sum, r] : order) {
    const std::string l = Text(t.rows[r], label);
    c.bars.push_back(l.empty() ? "-" : l);
    std::vector<double> v;
    for (int col : cols) v.push_back(At(t.rows[r], col));
    c.values.push_back(std::move(v));
  }
  Add(out, c);
}

}  // namespace

std::set<size_t> HighlightedRows(const Section& s, const Table& t) {
  std::set<size_t> rows;
  if (t.id != "rank_summary") return rows;
  // The straggler: the slowest rank, when the section found it slow enough to warn.
  const bool warned = std::ranges::any_of(
      s.findings, [](const Finding& f) { return f.severity != Severity::kInfo; });
  const Metric* m = s.FindMetric("slowest_rank");
  const double slowest = m != nullptr ? AsNumber(m->value) : kNaN;
  if (!warned || !std::isfinite(slowest)) return rows;
  const int rank = t.ColumnIndex("rank");
  for (size_t i = 0; i < t.rows.size(); ++i)
    if (At(t.rows[i], rank) == slowest) rows.insert(i);
  return rows;
}

std::vector<Chart> SectionCharts(const Section& s) {
  std::vector<Chart> out;
  for (const Table& t : s.tables)  // first what the section's builder asked for
    if (t.chart.kind != ChartKind::kNone) Hinted(t, out);
  std::set<std::string> drawn;
  if (s.id == "speed") {
    Speed(s, out);
    drawn = {"training_rate", "validation_rate"};
  } else if (s.id == "operators") {
    Memory(s, out);
    drawn = {"memory_timeline"};
    if (const Table* t = s.FindTable("operators_top")) {
      Add(out, RowBars(*t, "operators_top", "Self CPU time by operator", t->ColumnIndex("name"),
                       t->ColumnIndex("self_cpu_s"), 20));
    }
  } else if (s.id == "system") {
    System(s, out);
    drawn = {"system_timeseries"};
  } else if (s.id == "time") {
    if (const Table* t = s.FindTable("time_report")) {
      Add(out, RowBars(*t, "time_report", "Total time per action", t->ColumnIndex("action"),
                       t->ColumnIndex("total_s"), 15));
    }
  } else if (s.id == "overview") {
    StepBreakdown(s, out);
  } else if (s.id == "hta") {
    Hta(s, out);
  } else if (s.id == "distributed") {
    StepBreakdown(s, out, "distributed_step_breakdown", "Computation and communication per step");
  } else if (s.id == "ranks") {
    Ranks(s, out);
  } else if (s.id == "key_figures" || s.id == "gate") {
    CompareBars(s, out);
  }
  for (const Table& t : s.tables) {
    if (t.chart.kind == ChartKind::kNone && t.kind == TableKind::kSeries && drawn.count(t.id) == 0)
      GenericSeries(t, out);
  }
  return out;
}

}  // namespace trainprof::report::html
