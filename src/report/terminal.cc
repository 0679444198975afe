#include "report/terminal.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "base/text.h"
#include "report/format.h"

namespace trainprof::report {
namespace {

// At most kDiagnosticsPerName lines of one diagnostic, then how many more (one per rank file of
// 10,000 would bury the report); every one is in diagnostics.csv.
constexpr size_t kDiagnosticsPerName = 5;

void RenderDiagnostics(const std::vector<Diagnostic>& all, std::ostream& out) {
  std::map<std::string_view, size_t> seen;
  for (const Diagnostic& d : all)
    if (++seen[d.name()] <= kDiagnosticsPerName)
      out << fmt::format("  [{}] {} (x{}): {}\n", SeverityName(SeverityFor(d.severity())), d.name(),
                         d.count, d.message);
  for (const auto& [name, n] : seen)
    if (n > kDiagnosticsPerName)
      out << fmt::format("  ... and {} more {} (all in diagnostics.csv)\n", n - kDiagnosticsPerName,
                         name);
}

// Columns on screen: UTF-8 continuation bytes take none ("µs" is two columns).
size_t DisplayWidth(const std::string& s) {
  size_t w = 0;
  for (unsigned char c : s) w += (c & 0xC0) != 0x80;
  return w;
}

void Pad(std::ostream& out, const std::string& s, size_t width, bool right) {
  const size_t w = DisplayWidth(s);
  const std::string fill(width > w ? width - w : 0, ' ');
  if (right) {
    out << fill << s;
  } else {
    out << s << fill;
  }
}

bool RightAligned(Unit u) { return u != Unit::kText; }

std::string MetaValueText(const Value& v) { return FormatHuman(v, Unit::kNumber); }

void RenderMetrics(const Section& s, std::ostream& out) {
  size_t width = 0;
  for (const Metric& m : s.metrics) width = std::max(width, DisplayWidth(m.title));
  for (const Metric& m : s.metrics) {
    out << "  ";
    Pad(out, m.title, width, false);
    std::string v = FormatHuman(m.value, m.unit);
    if (!std::holds_alternative<std::monostate>(m.value) && !m.suffix.empty()) v += " " + m.suffix;
    out << "  " << v << '\n';
  }
}

}  // namespace

void RenderTableText(const Table& t, std::ostream& out) {
  out << "  " << t.title << '\n';
  if (t.csv_only) {  // its rows may not be in memory: they are counted nowhere but the file
    out << fmt::format("    rows in {}.csv\n", t.id);
    return;
  }
  if (t.kind == TableKind::kSeries) {
    out << fmt::format("    {} points, in {}.csv and report.json\n", t.rows.size(), t.id);
    return;
  }
  if (t.kind == TableKind::kDetail) {
    out << fmt::format("    {} rows, in {}.csv and report.json\n", t.rows.size(), t.id);
    return;
  }
  std::vector<size_t> shown;  // the columns printed here
  for (size_t i = 0; i < t.columns.size(); ++i) {
    if (t.columns[i].in_terminal) shown.push_back(i);
  }
  const size_t n = shown.size();
  std::vector<std::vector<std::string>> cells;
  auto add = [&](const std::vector<Value>& row) {
    const size_t r = cells.size();
    std::vector<std::string> c(n);
    for (size_t k = 0; k < n; ++k) {
      const size_t i = shown[k];
      if (i >= row.size()) continue;
      c[k] = FormatHuman(row[i], t.CellUnit(i, r));
    }
    cells.push_back(std::move(c));
  };
  for (const auto& r : t.rows) add(r);
  for (const auto& r : t.footer) add(r);
  for (size_t k = 0; k < n; ++k) {  // long names cut where they differ from the others'
    const size_t w = t.columns[shown[k]].terminal_width;
    if (w == 0) continue;
    std::vector<std::string> column;
    for (const auto& c : cells) column.push_back(c[k]);
    column = base::EllipsizeApart(column, w);
    for (size_t r = 0; r < cells.size(); ++r) cells[r][k] = std::move(column[r]);
  }
  std::vector<size_t> width(n);
  for (size_t k = 0; k < n; ++k) {
    width[k] = DisplayWidth(t.columns[shown[k]].title);
    for (const auto& c : cells) width[k] = std::max(width[k], DisplayWidth(c[k]));
  }
  size_t total = 0;
  for (size_t w : width) total += w + 2;
  const std::string rule = "  " + std::string(total > 2 ? total - 2 : 0, '-') + "\n";
  auto line = [&](const std::vector<std::string>& c) {
    out << "  ";
    for (size_t k = 0; k < n; ++k) {
      if (k > 0) out << "  ";
      Pad(out, c[k], width[k], RightAligned(t.columns[shown[k]].unit));
    }
    out << '\n';
  };
  std::vector<std::string> header(n);
  for (size_t k = 0; k < n; ++k) header[k] = t.columns[shown[k]].title;
  line(header);
  out << rule;
  for (size_t r = 0; r < t.rows.size(); ++r) line(cells[r]);
  if (t.rows.empty()) out << "  (no rows)\n";
  if (!t.footer.empty()) {
    out << rule;
    for (size_t r = t.rows.size(); r < cells.size(); ++r) line(cells[r]);
  }
  for (const std::string& note : t.notes) out << "  * " << note << '\n';
}

void TerminalRenderer::Render(const Report& r, std::ostream& out) const {
  out << r.title << '\n' << std::string(DisplayWidth(r.title), '=') << '\n';
  size_t width = 0;
  for (const MetaEntry& m : r.meta) {
    if (m.in_terminal) width = std::max(width, DisplayWidth(m.key));
  }
  for (const MetaEntry& m : r.meta) {
    if (!m.in_terminal) continue;
    out << "  ";
    Pad(out, m.key, width, false);
    out << "  " << MetaValueText(m.value) << '\n';
  }
  for (const Section& s : r.sections) {
    out << '\n' << s.title << '\n' << std::string(DisplayWidth(s.title), '-') << '\n';
    if (!s.no_data.empty()) {
      out << "  " << s.no_data << '\n';
      continue;
    }
    for (const Finding& f : s.findings) {
      out << "  [" << SeverityName(f.severity) << "] " << f.text << '\n';
    }
    for (const std::string& note : s.notes) out << "  " << note << '\n';
    if (!s.metrics.empty()) RenderMetrics(s, out);
    for (const Table& t : s.tables) {
      out << '\n';
      RenderTableText(t, out);
    }
  }
  if (!r.diagnostics.empty()) {
    out << "\nDiagnostics\n-----------\n";
    RenderDiagnostics(r.diagnostics, out);
  }
}

}  // namespace trainprof::report
