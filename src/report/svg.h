// Charts drawn as inline SVG for report.html: line charts (values over time) and bar charts
// (plain or stacked, vertical or horizontal). Pure functions from data to markup: no scripts,
// no fonts or files fetched, so a report opens offline and prints as it shows.
//
//   svg::LineChart c{.id = "throughput", .title = "Throughput", .y_unit = Unit::kPerSecond};
//   c.lines.push_back({"training", xs, ys});
//   std::string markup = svg::Render(c);
//
// Every chart is <svg class="chart" data-chart="ID" data-kind="line|bar" data-series="N">,
// with the full value of each bar and each marked point in a <title> (the browser's tooltip).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "report/report.h"

namespace trainprof::report::svg {

struct Line {
  std::string label;
  std::vector<double> x, y;  // same length; NaN y breaks the line
};

struct LineChart {
  std::string id;
  std::string title;
  Unit x_unit = Unit::kSeconds;
  Unit y_unit = Unit::kNumber;
  std::string y_suffix;  // appended to y tick labels, e.g. "samples/s"
  std::vector<Line> lines;
  bool mark_peak = false;  // a dot and a label at the highest y of all lines
};

struct BarChart {
  std::string id;
  std::string title;
  Unit unit = Unit::kNumber;
  std::vector<std::string> bars;            // one label per bar
  std::vector<std::string> segments;        // stacked parts; one name for a plain bar chart
  std::vector<std::vector<double>> values;  // values[bar][segment]; NaN counts as 0
  std::vector<bool> highlight;              // per bar (empty: none), drawn in red and marked
  bool horizontal = false;
};

// Long lines are reduced to the minimum and maximum of each of ~600 buckets along x, which keeps
// every peak. A chart with no finite value renders a note instead of axes.
std::string Render(const LineChart& chart);
std::string Render(const BarChart& chart);

// Escapes &, <, >, " and ' for text and attribute values of HTML and SVG.
void AppendEscaped(std::string& out, std::string_view s);
std::string Escaped(std::string_view s);

// Tick values covering [lo, hi]: about `count` steps of 1, 2 or 5 times a power of ten.
std::vector<double> NiceTicks(double lo, double hi, int count);

}  // namespace trainprof::report::svg
