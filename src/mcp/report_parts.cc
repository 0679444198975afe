#include "mcp/report_parts.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

#include "report/format.h"

namespace trainprof::mcp {

using report::Section;
using report::Table;

Json MetricJson(const Section& s, const report::Metric& m) {
  std::string text = report::FormatHuman(m.value, m.unit);
  if (!m.suffix.empty()) text += " " + m.suffix;
  return {{"id", s.id + "." + m.key},
          {"title", m.title},
          {"value", report::ValueToJson(m.value)},
          {"unit", report::UnitName(m.unit)},
          {"text", text}};
}

Json FindingJson(const Section& s, size_t index, const report::Finding& f) {
  Json j = {{"id", fmt::format("{}#{}", s.id, index + 1)},
            {"severity", report::SeverityName(f.severity)},
            {"text", f.text}};
  if (!f.rule.empty()) {
    j["rule"] = f.rule;
    j["ranks"] = f.ranks;
    j["saves_s"] = report::ValueToJson(f.saves_s);
  }
  return j;
}

std::string TableId(const Section& s, const Table& t) { return s.id + "/" + t.id; }

const Table* FindTableById(const report::Report& r, std::string_view id, const Section** section) {
  const Table* found = nullptr;
  int matches = 0;
  for (const Section& s : r.sections) {
    for (const Table& t : s.tables) {
      if (TableId(s, t) == id) {
        if (section != nullptr) *section = &s;
        return &t;
      }
      if (t.id == id) {
        ++matches;
        found = &t;
        if (section != nullptr) *section = &s;
      }
    }
  }
  return matches == 1 ? found : nullptr;
}

std::vector<std::string> TableIds(const report::Report& r) {
  std::vector<std::string> out;
  for (const Section& s : r.sections)
    for (const Table& t : s.tables) out.push_back(TableId(s, t));
  return out;
}

Json ColumnsJson(const Table& t) {
  Json cols = Json::array();
  for (const report::Column& c : t.columns)
    cols.push_back({{"key", c.key}, {"title", c.title}, {"unit", report::UnitName(c.unit)}});
  return cols;
}

Json RowJson(const Table& t, const std::vector<report::Value>& row) {
  Json j = Json::object();
  for (size_t c = 0; c < t.columns.size() && c < row.size(); ++c)
    j[t.columns[c].key] = report::ValueToJson(row[c]);
  return j;
}

Json DiagnosticsJson(const report::Report& r) {
  Json out = Json::array();
  for (const report::Diagnostic& d : r.diagnostics) {
    out.push_back({{"severity", report::SeverityName(report::SeverityFor(d.severity()))},
                   {"name", std::string(d.name())},
                   {"count", d.count},
                   {"message", d.message}});
  }
  return out;
}

const report::Finding* FindFindingById(const report::Report& r, std::string_view id,
                                       const Section** section) {
  const size_t hash = id.find('#');
  if (hash == std::string_view::npos) return nullptr;
  const std::string_view sid = id.substr(0, hash), num = id.substr(hash + 1);
  size_t n = 0;
  if (std::from_chars(num.data(), num.data() + num.size(), n).ec != std::errc() || n == 0)
    return nullptr;
  for (const Section& s : r.sections) {
    if (s.id != sid || n > s.findings.size()) continue;
    if (section != nullptr) *section = &s;
    return &s.findings[n - 1];
  }
  return nullptr;
}

}  // namespace trainprof::mcp

namespace trainprof::mcp {

size_t FitChars(Json& items, size_t max_chars) {
  size_t chars = 2, kept = 0;
  for (const Json& item : items) {
    const size_t n = Line(item).size() + 1;
    if (chars + n > max_chars) break;
    chars += n;
    ++kept;
  }
  const size_t dropped = items.size() - kept;
  items.erase(items.begin() + static_cast<std::ptrdiff_t>(kept), items.end());
  return dropped;
}

}  // namespace trainprof::mcp

namespace trainprof::mcp {

namespace {

Json TableDigest(const report::Section& s, const Table& t, int64_t rows_per_table) {
  Json rows = Json::array();
  size_t total = 0;
  t.ForEachRowBlock([&](const std::vector<std::vector<report::Value>>& block) {
    for (const auto& row : block)
      if (total++ < static_cast<size_t>(rows_per_table)) rows.push_back(RowJson(t, row));
  });
  Json j = {{"id", TableId(s, t)},
            {"title", t.title},
            {"columns", ColumnsJson(t)},
            {"total_rows", total},
            {"rows", std::move(rows)}};
  if (!t.notes.empty()) j["notes"] = t.notes;
  return j;
}

}  // namespace

Json ReportDigest(const report::Report& r, int64_t rows_per_table, size_t max_chars) {
  Json sections = Json::array();
  for (const Section& s : r.sections) {
    Json metrics = Json::array(), findings = Json::array(), tables = Json::array();
    for (const report::Metric& m : s.metrics) metrics.push_back(MetricJson(s, m));
    for (size_t i = 0; i < s.findings.size(); ++i)
      findings.push_back(FindingJson(s, i, s.findings[i]));
    for (const Table& t : s.tables) tables.push_back(TableDigest(s, t, rows_per_table));
    Json j = {{"id", s.id},
              {"title", s.title},
              {"metrics", std::move(metrics)},
              {"findings", std::move(findings)},
              {"tables", std::move(tables)}};
    if (!s.notes.empty()) j["notes"] = s.notes;
    if (!s.no_data.empty()) j["no_data"] = s.no_data;
    sections.push_back(std::move(j));
  }
  const size_t dropped = FitChars(sections, max_chars);
  Json out = {{"kind", r.kind}, {"title", r.title}, {"sections", std::move(sections)}};
  if (dropped > 0)
    out["more"] = fmt::format(
        "{} later section{} left out to fit the size limit; ask with "
        "fewer rows_per_table",
        dropped, dropped == 1 ? "" : "s");
  return out;
}

}  // namespace trainprof::mcp
