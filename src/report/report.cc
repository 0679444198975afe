#include "report/report.h"

#include <algorithm>
#include <limits>

namespace trainprof::report {

const char* UnitName(Unit unit) {
  switch (unit) {
    case Unit::kText:
      return "text";
    case Unit::kCount:
      return "count";
    case Unit::kNumber:
      return "number";
    case Unit::kSeconds:
      return "seconds";
    case Unit::kBytes:
      return "bytes";
    case Unit::kPercent:
      return "percent";
    case Unit::kPerSecond:
      return "per_second";
    case Unit::kBool:
      return "bool";
    case Unit::kBytesPerSecond:
      return "bytes_per_second";
    case Unit::kWatts:
      return "watts";
    case Unit::kJoules:
      return "joules";
    case Unit::kCelsius:
      return "celsius";
    case Unit::kMegahertz:
      return "megahertz";
    case Unit::kByRow:
      return "by_row";
    case Unit::kPercentPoints:
      return "percent_points";
    case Unit::kId:
      return "id";
  }
  return "text";
}

Severity SeverityFor(base::DataSeverity s) {
  switch (s) {
    case base::DataSeverity::kInfo:
      return Severity::kInfo;
    case base::DataSeverity::kDataLoss:
      return Severity::kWarning;
    case base::DataSeverity::kError:
      return Severity::kError;
  }
  return Severity::kError;
}

const char* SeverityName(Severity s) {
  switch (s) {
    case Severity::kInfo:
      return "info";
    case Severity::kWarning:
      return "warning";
    case Severity::kError:
      return "error";
  }
  return "info";
}

Table& Section::AddTable(std::string table_id, std::string table_title, std::vector<Column> cols,
                         TableKind kind) {
  Table t;
  t.id = std::move(table_id);
  t.title = std::move(table_title);
  t.kind = kind;
  t.columns = std::move(cols);
  tables.push_back(std::move(t));
  return tables.back();
}

double AsNumber(const Value& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  if (const auto* d = std::get_if<double>(&v)) return *d;
  return std::numeric_limits<double>::quiet_NaN();
}

int Table::ColumnIndex(std::string_view key) const {
  for (size_t i = 0; i < columns.size(); ++i)
    if (columns[i].key == key) return static_cast<int>(i);
  return -1;
}

Unit Table::CellUnit(size_t c, size_t row) const {
  Unit u = columns[c].unit;
  if (u == Unit::kByRow) u = row < row_units.size() ? row_units[row] : Unit::kNumber;
  if (columns[c].change && u == Unit::kPercent) u = Unit::kPercentPoints;
  return u;
}

const Table* Section::FindTable(std::string_view table_id) const {
  for (const Table& t : tables)
    if (t.id == table_id) return &t;
  return nullptr;
}

const Metric* Section::FindMetric(std::string_view key) const {
  for (const Metric& m : metrics)
    if (m.key == key) return &m;
  return nullptr;
}

void Section::AddMetric(std::string key, std::string title, Value v, Unit unit,
                        std::string suffix) {
  metrics.push_back({std::move(key), std::move(title), std::move(v), unit, std::move(suffix)});
}

Section& Report::AddSection(std::string id, std::string title) {
  Section s;
  s.id = std::move(id);
  s.title = std::move(title);
  sections.push_back(std::move(s));
  return sections.back();
}

const Section* Report::FindSection(const std::string& id) const {
  for (const Section& s : sections) {
    if (s.id == id) return &s;
  }
  return nullptr;
}

const Table* Report::FindTable(const std::string& section_id, std::string_view table_id) const {
  const Section* s = FindSection(section_id);
  return s != nullptr ? s->FindTable(table_id) : nullptr;
}

void Report::AddMeta(std::string key, Value value, bool in_terminal) {
  meta.push_back({std::move(key), std::move(value), in_terminal});
}

const Value* Report::FindMeta(std::string_view key) const {
  for (const MetaEntry& m : meta)
    if (m.key == key) return &m.value;
  return nullptr;
}

void AdoptSections(Report& into, Report from, const AdoptRule& rule) {
  for (Section& s : from.sections) {
    if (std::find(rule.skip.begin(), rule.skip.end(), s.id) != rule.skip.end()) continue;
    if (!rule.id_prefix.empty() && into.FindSection(s.id) != nullptr) s.id = rule.id_prefix + s.id;
    s.title = rule.title_prefix + s.title;
    into.sections.push_back(std::move(s));
  }
  if (!rule.diagnostics) return;
  for (Diagnostic& d : from.diagnostics) into.diagnostics.push_back(std::move(d));
}

}  // namespace trainprof::report
