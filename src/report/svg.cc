#include "report/svg.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

#include "base/text.h"
#include "report/format.h"

namespace trainprof::report::svg {
namespace {

// Tableau 10: distinct in print and for the common colour-vision deficiencies.
constexpr const char* kPalette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#76b7b2", "#edc948",
                                    "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac", "#e15759"};
constexpr const char* kHighlight = "#d62728";
constexpr double kWidth = 760;
constexpr size_t kMaxLinePoints = 1200;
// A vertical bar chart draws at most this many bars (about one per pixel of the plot).
constexpr size_t kMaxBars = 600;

const char* Color(size_t i) { return kPalette[i % std::size(kPalette)]; }

std::string Label(double v, Unit unit) {
  if (unit == Unit::kCount) return FormatHuman(Value(static_cast<int64_t>(std::llround(v))), unit);
  return FormatHuman(Value(v), unit);
}

void OpenSvg(std::string& out, const std::string& id, const char* kind, size_t series,
             double height, const std::string& title) {
  fmt::format_to(std::back_inserter(out),
                 "<svg class=\"chart\" data-chart=\"{}\" data-kind=\"{}\" data-series=\"{}\" "
                 "viewBox=\"0 0 {} {:.0f}\" role=\"img\" aria-label=\"",
                 Escaped(id), kind, series, kWidth, height);
  AppendEscaped(out, title);
  out += "\"><title>";
  AppendEscaped(out, title);
  out += "</title>";
}

void Legend(std::string& out, const std::vector<std::string>& names, double left) {
  if (names.size() < 2) return;
  double x = left;
  for (size_t i = 0; i < names.size(); ++i) {
    std::string name = base::Ellipsize(names[i], 28);
    fmt::format_to(std::back_inserter(out),
                   "<rect x=\"{:.1f}\" y=\"6\" width=\"10\" height=\"10\" fill=\"{}\"/>"
                   "<text class=\"legend\" x=\"{:.1f}\" y=\"15\">",
                   x, Color(i), x + 14);
    AppendEscaped(out, name);
    out += "</text>";
    x += 24 + 6.5 * static_cast<double>(name.size());
    if (x > kWidth - 80) break;
  }
}

void NoData(std::string& out, double height) {
  fmt::format_to(std::back_inserter(out),
                 "<text class=\"nodata\" x=\"{}\" y=\"{:.0f}\">no values to plot</text></svg>",
                 kWidth / 2, height / 2);
}

struct Range {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  void Add(double v) {
    if (!std::isfinite(v)) return;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  bool Empty() const { return lo > hi; }
};

// Keeps the first and last point and, in each of ~kMaxLinePoints/2 buckets along the index,
// the lowest and the highest point (in x order).
std::vector<size_t> Reduce(const Line& l) {
  const size_t n = std::min(l.x.size(), l.y.size());
  std::vector<size_t> keep;
  if (n <= kMaxLinePoints) {
    for (size_t i = 0; i < n; ++i) keep.push_back(i);
    return keep;
  }
  const size_t buckets = kMaxLinePoints / 2;
  for (size_t b = 0; b < buckets; ++b) {
    const size_t from = b * n / buckets, to = (b + 1) * n / buckets;
    size_t lo = from, hi = from;
    for (size_t i = from; i < to; ++i) {
      if (!std::isfinite(l.y[i])) {
        keep.push_back(i);  // keep the gap
        continue;
      }
      if (!std::isfinite(l.y[lo]) || l.y[i] < l.y[lo]) lo = i;
      if (!std::isfinite(l.y[hi]) || l.y[i] > l.y[hi]) hi = i;
    }
    keep.push_back(std::min(lo, hi));
    if (hi != lo) keep.push_back(std::max(lo, hi));
  }
  std::ranges::sort(keep);
  keep.erase(std::unique(keep.begin(), keep.end()), keep.end());
  return keep;
}

// The leading part of `s` that fits in `px` at the charts' 11 px font, with "..." when cut:
// capitals and digits are about 7.3 px wide, other letters about 6 px, the rest 4. A label
// drawn right-aligned against the plot ("COMPUTATION overlapping COMMUNICATION") otherwise runs
// off the chart's left edge.
std::string FitLabel(std::string_view s, double px) {
  double w = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char ch = static_cast<unsigned char>(s[i]);
    w += std::isupper(ch) || std::isdigit(ch) ? 7.3 : std::isalpha(ch) ? 6.0 : 4.0;
    if (w > px) return base::Ellipsize(s, std::max<size_t>(i, 4));
  }
  return std::string(s);
}

}  // namespace

void AppendEscaped(std::string& out, std::string_view s) {
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
}

std::string Escaped(std::string_view s) {
  std::string out;
  AppendEscaped(out, s);
  return out;
}

std::vector<double> NiceTicks(double lo, double hi, int count) {
  if (!(hi > lo)) return {lo};
  const double raw = (hi - lo) / std::max(count, 1);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * mag;
    if (step >= raw) break;
  }
  std::vector<double> ticks;
  const double first = std::floor(lo / step + 1e-9), last = std::ceil(hi / step - 1e-9);
  for (double k = first; k <= last && ticks.size() < 50; k += 1) {
    ticks.push_back(k == 0 ? 0.0 : k * step);
  }
  return ticks;
}

std::string Render(const LineChart& c) {
  constexpr double kHeight = 260, kLeft = 76, kRight = 16, kTop = 30, kBottom = 34;
  std::string out;
  OpenSvg(out, c.id, "line", c.lines.size(), kHeight, c.title);
  Range xr, yr;
  for (const Line& l : c.lines) {
    for (size_t i = 0; i < std::min(l.x.size(), l.y.size()); ++i) {
      if (!std::isfinite(l.y[i])) continue;
      xr.Add(l.x[i]);
      yr.Add(l.y[i]);
    }
  }
  if (xr.Empty()) {
    NoData(out, kHeight);
    return out;
  }
  yr.lo = std::min(yr.lo, 0.0);
  if (yr.hi <= yr.lo) yr.hi = yr.lo + 1;
  if (xr.hi <= xr.lo) xr.hi = xr.lo + 1;
  std::vector<double> yt = NiceTicks(yr.lo, yr.hi, 5);
  yr.lo = std::min(yr.lo, yt.front());
  yr.hi = std::max(yr.hi, yt.back());
  const double pw = kWidth - kLeft - kRight, ph = kHeight - kTop - kBottom;
  auto X = [&](double x) { return kLeft + (x - xr.lo) / (xr.hi - xr.lo) * pw; };
  auto Y = [&](double y) { return kTop + ph - (y - yr.lo) / (yr.hi - yr.lo) * ph; };
  std::string suffix = c.y_suffix.empty() ? "" : " " + c.y_suffix;
  for (double t : yt) {
    fmt::format_to(std::back_inserter(out),
                   "<line class=\"grid\" x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" y2=\"{:.1f}\"/>"
                   "<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">",
                   kLeft, kLeft + pw, Y(t), Y(t), kLeft - 4, Y(t) + 4);
    AppendEscaped(out, Label(t, c.y_unit));
    out += "</text>";
  }
  const double x_slack = (xr.hi - xr.lo) * 1e-9;
  for (double t : NiceTicks(xr.lo, xr.hi, 8)) {
    // The x range is the data's own: a rounded tick beyond it would sit outside the plot.
    if (t < xr.lo - x_slack || t > xr.hi + x_slack) continue;
    fmt::format_to(std::back_inserter(out),
                   "<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">", X(t),
                   kTop + ph + 16);
    AppendEscaped(out, Label(t, c.x_unit));
    out += "</text>";
  }
  fmt::format_to(std::back_inserter(out),
                 "<rect class=\"frame\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" "
                 "height=\"{:.1f}\"/>",
                 kLeft, kTop, pw, ph);
  double peak_x = 0, peak_y = -std::numeric_limits<double>::infinity();
  std::vector<std::string> names;
  for (size_t li = 0; li < c.lines.size(); ++li) {
    const Line& l = c.lines[li];
    names.push_back(l.label);
    std::string points;
    auto flush = [&] {
      if (points.empty()) return;
      fmt::format_to(std::back_inserter(out),
                     "<polyline class=\"series\" data-label=\"{}\" stroke=\"{}\" points=\"{}\"/>",
                     Escaped(l.label), Color(li), points);
      points.clear();
    };
    for (size_t i : Reduce(l)) {
      if (!std::isfinite(l.y[i]) || !std::isfinite(l.x[i])) {
        flush();
        continue;
      }
      fmt::format_to(std::back_inserter(points), "{}{:.1f},{:.1f}", points.empty() ? "" : " ",
                     X(l.x[i]), Y(l.y[i]));
      if (l.y[i] > peak_y) peak_y = l.y[i], peak_x = l.x[i];
    }
    flush();
  }
  if (c.mark_peak && std::isfinite(peak_y)) {
    const std::string text =
        fmt::format("peak {}{} at {}", Label(peak_y, c.y_unit), suffix, Label(peak_x, c.x_unit));
    const bool left = X(peak_x) > kLeft + pw * 0.7;
    fmt::format_to(std::back_inserter(out),
                   "<g class=\"peak\"><circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\"/>"
                   "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"{}\">",
                   X(peak_x), Y(peak_y), X(peak_x) + (left ? -7 : 7), Y(peak_y) + 12,
                   left ? "end" : "start");
    AppendEscaped(out, text);
    out += "</text><title>";
    AppendEscaped(out, text);
    out += "</title></g>";
  }
  Legend(out, names, kLeft);
  out += "</svg>";
  return out;
}

namespace {

// Of every k consecutive bars, the one with the largest total, so that a spike stays in view
// with its own label; the title says so.
BarChart LargestOfEach(const BarChart& c, size_t max_bars) {
  const size_t n = c.bars.size(), k = (n + max_bars - 1) / max_bars;
  auto total = [&](size_t b) {
    double t = 0;
    if (b < c.values.size())
      for (double v : c.values[b]) t += std::isfinite(v) ? std::max(v, 0.0) : 0.0;
    return t;
  };
  BarChart out{.id = c.id,
               .title = fmt::format("{} (the largest of each {} bars of {})", c.title, k, n),
               .unit = c.unit,
               .segments = c.segments,
               .horizontal = c.horizontal};
  for (size_t from = 0; from < n; from += k) {
    size_t best = from;
    for (size_t b = from + 1; b < std::min(n, from + k); ++b)
      if (total(b) > total(best)) best = b;
    out.bars.push_back(c.bars[best]);
    out.values.push_back(best < c.values.size() ? c.values[best] : std::vector<double>{});
    if (!c.highlight.empty()) {
      bool hot = false;
      for (size_t b = from; b < std::min(n, from + k); ++b)
        hot = hot || (b < c.highlight.size() && c.highlight[b]);
      out.highlight.push_back(hot);
    }
  }
  return out;
}

}  // namespace

std::string Render(const BarChart& chart) {
  if (!chart.horizontal && chart.bars.size() > kMaxBars)
    return Render(LargestOfEach(chart, kMaxBars));
  const BarChart& c = chart;
  const size_t n = c.bars.size();
  const bool stacked = c.segments.size() > 1;
  auto value = [&](size_t b, size_t s) {
    double v = b < c.values.size() && s < c.values[b].size() ? c.values[b][s] : 0.0;
    return std::isfinite(v) ? v : 0.0;
  };
  Range r;
  r.Add(0);
  for (size_t b = 0; b < n; ++b) {
    double total = 0;
    for (size_t s = 0; s < c.segments.size(); ++s) {
      total += stacked ? std::max(value(b, s), 0.0) : value(b, s);
      r.Add(total);
    }
  }
  if (r.hi <= r.lo) r.hi = r.lo + 1;
  std::vector<double> ticks = NiceTicks(r.lo, r.hi, c.horizontal ? 6 : 5);
  r.lo = std::min(r.lo, ticks.front());
  r.hi = std::max(r.hi, ticks.back());
  const double kTop = c.segments.size() > 1 ? 30 : 12;
  const double kLeft = c.horizontal ? 240 : 76, kRight = c.horizontal ? 70 : 16;
  const double kBottom = c.horizontal ? 24 : 40;
  const double height = c.horizontal ? kTop + 20.0 * static_cast<double>(n) + kBottom : 260;
  std::string out;
  OpenSvg(out, c.id, "bar", c.segments.size(), height, c.title);
  if (n == 0) {
    NoData(out, height);
    return out;
  }
  const double pw = kWidth - kLeft - kRight, ph = height - kTop - kBottom;
  // V: the value axis (y for vertical bars, x for horizontal ones).
  auto V = [&](double v) {
    double f = (v - r.lo) / (r.hi - r.lo);
    return c.horizontal ? kLeft + f * pw : kTop + ph - f * ph;
  };
  for (double t : ticks) {
    if (c.horizontal) {
      fmt::format_to(std::back_inserter(out),
                     "<line class=\"grid\" x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1:.1f}\" "
                     "y2=\"{2:.1f}\"/><text class=\"tick\" x=\"{0:.1f}\" y=\"{3:.1f}\" "
                     "text-anchor=\"middle\">",
                     V(t), kTop, kTop + ph, kTop + ph + 15);
    } else {
      fmt::format_to(std::back_inserter(out),
                     "<line class=\"grid\" x1=\"{0:.1f}\" x2=\"{1:.1f}\" y1=\"{2:.1f}\" "
                     "y2=\"{2:.1f}\"/><text class=\"tick\" x=\"{3:.1f}\" y=\"{4:.1f}\" "
                     "text-anchor=\"end\">",
                     kLeft, kLeft + pw, V(t), kLeft - 4, V(t) + 4);
    }
    AppendEscaped(out, Label(t, c.unit));
    out += "</text>";
  }
  const double slot = (c.horizontal ? ph : pw) / static_cast<double>(n);
  const double thick = slot >= 3 ? slot * 0.78 : slot;
  // At most ~24 category labels along a vertical chart's x axis.
  const size_t label_every = c.horizontal ? 1 : std::max<size_t>(1, (n + 23) / 24);
  for (size_t b = 0; b < n; ++b) {
    const bool hot = b < c.highlight.size() && c.highlight[b];
    const double pos =
        (c.horizontal ? kTop : kLeft) + slot * static_cast<double>(b) + (slot - thick) / 2;
    out += hot ? "<g class=\"bar highlight\">" : "<g class=\"bar\">";
    double base = 0, total = 0;
    for (size_t s = 0; s < c.segments.size(); ++s) {
      double v = stacked ? std::max(value(b, s), 0.0) : value(b, s);
      total += v;
      const double a = V(base), z = V(base + v);
      base += v;
      const char* fill = hot && !stacked ? kHighlight : Color(s);
      if (c.horizontal) {
        fmt::format_to(std::back_inserter(out),
                       "<rect x=\"{:.2f}\" y=\"{:.2f}\" width=\"{:.2f}\" height=\"{:.2f}\" "
                       "fill=\"{}\"><title>",
                       std::min(a, z), pos, std::abs(z - a), thick, fill);
      } else {
        fmt::format_to(std::back_inserter(out),
                       "<rect x=\"{:.2f}\" y=\"{:.2f}\" width=\"{:.2f}\" height=\"{:.2f}\" "
                       "fill=\"{}\"><title>",
                       pos, std::min(a, z), thick, std::abs(z - a), fill);
      }
      AppendEscaped(out, c.bars[b]);
      if (stacked) {
        out += " \xe2\x80\x94 ";
        AppendEscaped(out, c.segments[s]);
      }
      out += ": ";
      AppendEscaped(out, Label(value(b, s), c.unit));
      out += "</title></rect>";
    }
    if (c.horizontal) {
      fmt::format_to(std::back_inserter(out),
                     "<text class=\"cat\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">",
                     kLeft - 6, pos + thick / 2 + 4);
      AppendEscaped(out, FitLabel(base::Ellipsize(c.bars[b], 38), kLeft - 10));
      fmt::format_to(std::back_inserter(out),
                     "</text><text class=\"val\" x=\"{:.1f}\" y=\"{:.1f}\">",
                     std::max(V(total), V(0)) + 4, pos + thick / 2 + 4);
      AppendEscaped(out, Label(total, c.unit));
      out += "</text>";
    } else if (b % label_every == 0) {
      fmt::format_to(std::back_inserter(out),
                     "<text class=\"cat\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">",
                     pos + thick / 2, kTop + ph + 15);
      AppendEscaped(out, base::Ellipsize(c.bars[b], 12));
      out += "</text>";
    }
    if (hot) {
      fmt::format_to(std::back_inserter(out),
                     "<text class=\"mark\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">"
                     "{}</text>",
                     c.horizontal ? V(total) + 56 : pos + thick / 2,
                     c.horizontal ? pos + thick / 2 + 4 : V(total) - 4,
                     c.horizontal ? "\xe2\x97\x80" : "\xe2\x96\xbc");  // ◀ or ▼
    }
    out += "</g>";
  }
  fmt::format_to(std::back_inserter(out),
                 "<line class=\"axis\" x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" y2=\"{:.1f}\"/>",
                 c.horizontal ? V(0) : kLeft, c.horizontal ? V(0) : kLeft + pw,
                 c.horizontal ? kTop : V(0), c.horizontal ? kTop + ph : V(0));
  if (stacked) Legend(out, c.segments, kLeft);
  out += "</svg>";
  return out;
}

}  // namespace trainprof::report::svg
