#include "report/report.h"

namespace trainprof::report {

const char* UnitName(Unit unit) {
  switch (unit) {
    case Unit::kText: return "text";
    case Unit::kCount: return "count";
    case Unit::kNumber: return "number";
    case Unit::kSeconds: return "seconds";
    case Unit::kBytes: return "bytes";
    case Unit::kPercent: return "percent";
    case Unit::kPerSecond: return "per_second";
    case Unit::kBool: return "bool";
    case Unit::kBytesPerSecond: return "bytes_per_second";
    case Unit::kWatts: return "watts";
    case Unit::kJoules: return "joules";
    case Unit::kCelsius: return "celsius";
    case Unit::kMegahertz: return "megahertz";
    case Unit::kByRow: return "by_row";
  }
  return "text";
}

const char* SeverityName(Severity s) {
  switch (s) {
    case Severity::kInfo: return "info";
    case Severity::kWarning: return "warning";
    case Severity::kError: return "error";
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

void Report::AddMeta(std::string key, Value value, bool in_terminal) {
  meta.push_back({std::move(key), std::move(value), in_terminal});
}

}  // namespace trainprof::report
