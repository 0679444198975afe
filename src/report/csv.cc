#include "report/csv.h"

#include <fmt/format.h>

#include <sstream>

#include "base/atomic_file.h"
#include "report/format.h"

namespace trainprof::report {
namespace {

void Field(std::ostream& out, const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) {
    out << s;
    return;
  }
  out << '"';
  for (char c : s) {
    if (c == '"') out << '"';
    out << c;
  }
  out << '"';
}

void Row(std::ostream& out, const std::vector<std::string>& fields) {
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i > 0) out << ',';
    Field(out, fields[i]);
  }
  out << '\n';
}

}  // namespace

void RenderCsvTable(const Table& t, std::ostream& out) {
  std::vector<std::string> f;
  for (const Column& c : t.columns) f.push_back(c.key);
  Row(out, f);
  auto rows = [&](const std::vector<std::vector<Value>>& rs) {
    for (const auto& r : rs) {
      f.assign(t.columns.size(), "");
      for (size_t i = 0; i < f.size() && i < r.size(); ++i) f[i] = FormatMachine(r[i]);
      Row(out, f);
    }
  };
  rows(t.rows);
  rows(t.footer);
}

void RenderCsvMetrics(const Section& s, std::ostream& out) {
  Row(out, {"key", "title", "value", "unit"});
  for (const Metric& m : s.metrics) {
    Row(out, {m.key, m.title, FormatMachine(m.value), UnitName(m.unit)});
  }
}

Status WriteCsvFiles(const Report& r, const std::string& dir, std::vector<std::string>* written) {
  Status first = Status::Ok();
  auto write = [&](const std::string& name, const std::string& text) {
    Status s = base::WriteFileAtomically(fmt::format("{}/{}", dir, name), text);
    if (!s.ok()) {
      if (first.ok()) first = s;
      return;
    }
    if (written != nullptr) written->push_back(name);
  };
  for (const Section& s : r.sections) {
    if (!s.metrics.empty()) {
      std::ostringstream text;
      RenderCsvMetrics(s, text);
      write(s.id + "_metrics.csv", text.str());
    }
    for (const Table& t : s.tables) {
      std::ostringstream text;
      RenderCsvTable(t, text);
      write(t.id + ".csv", text.str());
    }
  }
  return first;
}

}  // namespace trainprof::report
