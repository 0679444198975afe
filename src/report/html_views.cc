#include "report/html_views.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <string_view>
#include <variant>

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

// A series table no builder asked a chart of: its first column against the numeric columns
// that share the first one's unit (at most 6).
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

// The hint's value columns that the table has, with their legend names.
struct ValueColumns {
  std::vector<int> index;
  std::vector<std::string> names;
};

ValueColumns Values(const Table& t, const ChartHint& h) {
  ValueColumns v;
  for (size_t i = 0; i < h.values.size(); ++i) {
    const int c = t.ColumnIndex(h.values[i]);
    if (c < 0) continue;
    v.index.push_back(c);
    v.names.push_back(i < h.names.size() && !h.names[i].empty() ? h.names[i] : t.columns[c].title);
  }
  return v;
}

bool IsHighlighted(const Table& t, const ChartHint& h, const std::vector<Value>& row) {
  const int c = h.highlight_key.empty() ? -1 : t.ColumnIndex(h.highlight_key);
  if (c < 0 || static_cast<size_t>(c) >= row.size()) return false;
  const auto* text = std::get_if<std::string>(&row[c]);
  const auto* want = std::get_if<std::string>(&h.highlight_value);
  if (text != nullptr || want != nullptr)
    return text != nullptr && want != nullptr && *text == *want;
  const double a = AsNumber(row[c]);
  return std::isfinite(a) && a == AsNumber(h.highlight_value);
}

// A bar's label: the `label` column's text, or `label_format` with each {key} replaced by the
// text of column `key`; `label_trim` cut from the front of each text.
std::string BarLabel(const Table& t, const ChartHint& h, const std::vector<Value>& row) {
  auto cell = [&](std::string_view key) {
    std::string text = Text(row, t.ColumnIndex(key));
    if (!h.label_trim.empty() && text.starts_with(h.label_trim)) text.erase(0, h.label_trim.size());
    return text;
  };
  std::string label;
  if (h.label_format.empty()) {
    label = cell(h.label);
  } else {
    const std::string_view f = h.label_format;
    for (size_t i = 0; i < f.size();) {
      const size_t close = f[i] == '{' ? f.find('}', i) : std::string_view::npos;
      if (close == std::string_view::npos) {
        label += f[i++];
        continue;
      }
      label += cell(f.substr(i + 1, close - i - 1));
      i = close + 1;
    }
  }
  return label.empty() ? "-" : label;
}

std::optional<svg::BarChart> Bars(const Table& t, const ChartHint& h, std::string id,
                                  std::string title) {
  const ValueColumns v = Values(t, h);
  if (v.index.empty() || (h.label_format.empty() && t.ColumnIndex(h.label) < 0)) return {};
  svg::BarChart c{.id = std::move(id),
                  .title = std::move(title),
                  .unit = t.columns[v.index[0]].unit,
                  .segments = v.names,
                  .horizontal = h.horizontal};
  std::vector<std::pair<double, size_t>> order;
  for (size_t r = 0; r < t.rows.size(); ++r) {
    double sum = 0;
    for (int col : v.index) sum += std::isfinite(At(t.rows[r], col)) ? At(t.rows[r], col) : 0;
    order.emplace_back(sum, r);
  }
  if (h.limit > 0) {
    // The largest by magnitude: a change (diff's deltas) counts as much when it is negative.
    std::ranges::stable_sort(
        order, [](const auto& a, const auto& b) { return std::abs(a.first) > std::abs(b.first); });
    if (order.size() > h.limit) order.resize(h.limit);
  }
  bool any_highlight = false;
  for (const auto& [sum, r] : order) {
    c.bars.push_back(BarLabel(t, h, t.rows[r]));
    std::vector<double> values;
    for (int col : v.index) values.push_back(At(t.rows[r], col));
    c.values.push_back(std::move(values));
    c.highlight.push_back(IsHighlighted(t, h, t.rows[r]));
    any_highlight = any_highlight || c.highlight.back();
  }
  if (!any_highlight) c.highlight.clear();
  return c;
}

// Adds the hint's lines to `c`: one per value column, or one per value column and distinct
// value of `split_by`; a line without a finite value is left out.
void AddLines(const Table& t, const ChartHint& h, svg::LineChart& c) {
  const ValueColumns v = Values(t, h);
  const int x = t.ColumnIndex(h.label);
  if (v.index.empty() || x < 0) return;
  const int split = h.split_by.empty() ? -1 : t.ColumnIndex(h.split_by);
  std::map<std::string, std::vector<svg::Line>> groups;  // by the split column's text
  for (const auto& row : t.rows) {
    std::vector<svg::Line>& lines = groups[split >= 0 ? Text(row, split) : std::string()];
    lines.resize(v.index.size());
    for (size_t i = 0; i < v.index.size(); ++i) {
      lines[i].x.push_back(At(row, x));
      lines[i].y.push_back(At(row, v.index[i]));
    }
  }
  for (auto& [group, lines] : groups) {
    for (size_t i = 0; i < lines.size(); ++i) {
      if (!AnyFinite(lines[i].y)) continue;
      lines[i].label = split >= 0 ? group + " " + v.names[i] : v.names[i];
      c.lines.push_back(std::move(lines[i]));
    }
  }
}

}  // namespace

std::set<size_t> HighlightedRows(const Table& t) {
  std::set<size_t> rows;
  for (const ChartHint& h : t.charts) {
    if (h.highlight_key.empty()) continue;
    for (size_t i = 0; i < t.rows.size(); ++i)
      if (IsHighlighted(t, h, t.rows[i])) rows.insert(i);
  }
  return rows;
}

std::vector<Chart> SectionCharts(const Section& s) {
  // Every table's hints in order; line hints sharing an id become one chart, in the place of
  // the first.
  std::vector<std::variant<svg::LineChart, svg::BarChart>> charts;
  std::map<std::string, size_t> line_charts;  // chart id -> index in `charts`
  for (const Table& t : s.tables) {
    if (t.csv_only) continue;  // its rows are in its CSV only
    for (const ChartHint& h : t.charts) {
      std::string id = h.id.empty() ? t.id : h.id;
      std::string title = h.title.empty() ? t.title : h.title;
      if (h.kind == ChartKind::kBars) {
        if (auto bars = Bars(t, h, std::move(id), std::move(title))) charts.emplace_back(*bars);
      } else if (h.kind == ChartKind::kLines) {
        auto [it, added] = line_charts.try_emplace(id, charts.size());
        if (added) {
          const int x = t.ColumnIndex(h.label);
          charts.emplace_back(svg::LineChart{.id = id,
                                             .title = std::move(title),
                                             .x_unit = x >= 0 ? t.columns[x].unit : Unit::kSeconds,
                                             .y_suffix = h.y_suffix,
                                             .mark_peak = h.mark_peak});
        }
        auto& c = std::get<svg::LineChart>(charts[it->second]);
        if (const ValueColumns v = Values(t, h); added && !v.index.empty())
          c.y_unit = t.columns[v.index[0]].unit;
        AddLines(t, h, c);
      }
    }
  }
  std::vector<Chart> out;
  for (const auto& chart : charts) {
    if (const auto* line = std::get_if<svg::LineChart>(&chart)) {
      if (!line->lines.empty()) Add(out, *line);
    } else {
      Add(out, std::get<svg::BarChart>(chart));
    }
  }
  for (const Table& t : s.tables)
    if (t.charts.empty() && t.kind == TableKind::kSeries) GenericSeries(t, out);
  return out;
}

}  // namespace trainprof::report::html
