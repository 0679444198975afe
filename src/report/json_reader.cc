#include "report/json_reader.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "report/csv_file_rows.h"

namespace trainprof::report {
namespace {

using Json = nlohmann::ordered_json;  // keeps the order of meta, config and metrics

constexpr Unit kAllUnits[] = {
    Unit::kText,           Unit::kCount,   Unit::kNumber,        Unit::kSeconds,
    Unit::kBytes,          Unit::kPercent, Unit::kPerSecond,     Unit::kBool,
    Unit::kBytesPerSecond, Unit::kWatts,   Unit::kJoules,        Unit::kCelsius,
    Unit::kMegahertz,      Unit::kByRow,   Unit::kPercentPoints, Unit::kId};

Value FromJson(const Json& j) {
  if (j.is_number_integer()) return j.get<int64_t>();
  if (j.is_number()) return j.get<double>();
  if (j.is_string()) return j.get<std::string>();
  if (j.is_boolean()) return j.get<bool>();
  return {};
}

Severity SeverityFromName(const std::string& s) {
  if (s == "warning") return Severity::kWarning;
  if (s == "error") return Severity::kError;
  return Severity::kInfo;
}

// Flattens {"host": {"name": "x"}} into ("host.name", "x").
template <typename Add>
void Flatten(const Json& obj, const std::string& prefix, const Add& add) {
  for (const auto& [k, v] : obj.items()) {
    std::string key = prefix.empty() ? k : prefix + "." + k;
    if (v.is_object()) {
      Flatten(v, key, add);
    } else {
      add(std::move(key), FromJson(v));
    }
  }
}

std::string Str(const Json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::vector<std::string> Strings(const Json& obj, const char* key) {
  std::vector<std::string> out;
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_array()) return out;
  for (const Json& s : *it)
    if (s.is_string()) out.push_back(s.get<std::string>());
  return out;
}

// A finding, with the rule, ranks and saving analyze's rules add (json.h).
Finding FindingOf(const Json& f) {
  Finding out{SeverityFromName(Str(f, "severity")), Str(f, "text")};
  out.rule = Str(f, "rule");
  if (auto it = f.find("ranks"); it != f.end() && it->is_array()) {
    for (const Json& r : *it)
      if (r.is_number_integer()) out.ranks.push_back(r.get<int64_t>());
  }
  if (auto it = f.find("saves_s"); it != f.end() && it->is_number())
    out.saves_s = it->get<double>();
  return out;
}

std::vector<std::vector<Value>> Rows(const Json& rows, const std::vector<Column>& cols) {
  std::vector<std::vector<Value>> out;
  if (!rows.is_array()) return out;
  out.reserve(rows.size());
  for (const Json& r : rows) {
    std::vector<Value> row(cols.size());
    if (r.is_object()) {
      for (size_t i = 0; i < cols.size(); ++i) {
        auto it = r.find(cols[i].key);
        if (it != r.end()) row[i] = FromJson(*it);
      }
    }
    out.push_back(std::move(row));
  }
  return out;
}

// A table's chart hints ("charts"); a hint of an unknown kind is left out.
std::vector<ChartHint> Charts(const Json& table) {
  std::vector<ChartHint> out;
  auto it = table.find("charts");
  if (it == table.end() || !it->is_array()) return out;
  for (const Json& c : *it) {
    if (!c.is_object()) continue;
    const std::string kind = Str(c, "kind");
    if (kind != "bars" && kind != "lines") continue;
    ChartHint h{.kind = kind == "bars" ? ChartKind::kBars : ChartKind::kLines,
                .id = Str(c, "id"),
                .title = Str(c, "title"),
                .label = Str(c, "label"),
                .values = Strings(c, "values"),
                .names = Strings(c, "names"),
                .label_format = Str(c, "label_format"),
                .label_trim = Str(c, "label_trim"),
                .split_by = Str(c, "split_by"),
                .y_suffix = Str(c, "y_suffix")};
    if (auto l = c.find("limit"); l != c.end() && l->is_number_unsigned())
      h.limit = l->get<size_t>();
    if (auto b = c.find("horizontal"); b != c.end() && b->is_boolean())
      h.horizontal = b->get<bool>();
    if (auto b = c.find("mark_peak"); b != c.end() && b->is_boolean()) h.mark_peak = b->get<bool>();
    if (auto hl = c.find("highlight"); hl != c.end() && hl->is_object()) {
      h.highlight_key = Str(*hl, "key");
      if (hl->contains("value")) h.highlight_value = FromJson((*hl)["value"]);
    }
    out.push_back(std::move(h));
  }
  return out;
}

Status ReadTable(const Json& j, Section& s) {
  if (!j.is_object() || !j.contains("columns") || !j["columns"].is_array())
    return InvalidArgument("a table without \"columns\"");
  std::vector<Column> cols;
  for (const Json& c : j["columns"]) {
    if (!c.is_object()) return InvalidArgument("a column that is not an object");
    cols.push_back({Str(c, "key"), Str(c, "title"), UnitFromName(Str(c, "unit"))});
    cols.back().change =
        c.contains("change") && c["change"].is_boolean() && c["change"].get<bool>();
  }
  const std::string kind = Str(j, "kind");
  Table& t = s.AddTable(Str(j, "id"), Str(j, "title"), std::move(cols),
                        kind == "series"   ? TableKind::kSeries
                        : kind == "detail" ? TableKind::kDetail
                                           : TableKind::kTable);
  if (j.contains("rows")) t.rows = Rows(j["rows"], t.columns);
  t.csv_only = j.contains("rows_in");  // its rows are in its CSV, not here
  if (j.contains("footer")) t.footer = Rows(j["footer"], t.columns);
  t.notes = Strings(j, "notes");
  t.charts = Charts(j);
  // kByRow values carry their unit in the table's "unit" text column.
  bool by_row = false;
  size_t unit_col = t.columns.size();
  for (size_t i = 0; i < t.columns.size(); ++i) {
    by_row = by_row || t.columns[i].unit == Unit::kByRow;
    if (t.columns[i].key == "unit") unit_col = i;
  }
  if (by_row) {
    for (const auto& row : t.rows) {
      const auto* name = unit_col < row.size() ? std::get_if<std::string>(&row[unit_col]) : nullptr;
      t.row_units.push_back(name != nullptr ? UnitFromName(*name) : Unit::kNumber);
    }
  }
  return Status::Ok();
}

Status ReadSection(const Json& j, Report& r) {
  if (!j.is_object()) return InvalidArgument("a section that is not an object");
  Section& s = r.AddSection(Str(j, "id"), Str(j, "title"));
  s.notes = Strings(j, "notes");
  s.no_data = Str(j, "no_data");
  if (auto it = j.find("findings"); it != j.end() && it->is_array()) {
    for (const Json& f : *it) {
      if (f.is_object()) s.findings.push_back(FindingOf(f));
    }
  }
  if (auto it = j.find("metrics"); it != j.end() && it->is_object()) {
    for (const auto& [key, m] : it->items()) {
      if (!m.is_object())
        return InvalidArgument(fmt::format("metric \"{}\" is not an object", key));
      s.AddMetric(key, Str(m, "title"), m.contains("value") ? FromJson(m["value"]) : Value(),
                  UnitFromName(Str(m, "unit")), Str(m, "suffix"));
    }
  }
  if (auto it = j.find("tables"); it != j.end() && it->is_array()) {
    for (const Json& t : *it) {
      Status st = ReadTable(t, s);
      if (!st.ok()) return InvalidArgument(fmt::format("section \"{}\": {}", s.id, st.message()));
    }
  }
  return Status::Ok();
}

}  // namespace

Unit UnitFromName(std::string_view name) {
  for (Unit u : kAllUnits)
    if (name == UnitName(u)) return u;
  return Unit::kText;
}

StatusOr<Report> ParseReportJson(std::string_view text, const std::string& origin) {
  Json j = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    // Parse again with exceptions only to learn where it failed (nlohmann reports the byte).
    std::string where;
    try {
      Json again = Json::parse(text.begin(), text.end());
      (void)again;
    } catch (const Json::parse_error& e) {
      where = fmt::format(" at byte {}", e.byte);
    }
    return InvalidArgument(fmt::format("{}: not valid JSON{}", origin, where));
  }
  if (!j.is_object() || !j.contains("schema_version") || !j.contains("sections") ||
      !j["sections"].is_array()) {
    return InvalidArgument(
        fmt::format("{}: not a trainprof report (no \"schema_version\" and \"sections\")", origin));
  }
  if (!j["schema_version"].is_number_integer())
    return InvalidArgument(fmt::format("{}: \"schema_version\" is not an integer", origin));
  const int version = j["schema_version"].get<int>();
  if (version > kSchemaVersion) {
    return FailedPrecondition(
        fmt::format("{}: report schema_version {} is newer than this trainprof reads ({}); "
                    "use a newer trainprof",
                    origin, version, kSchemaVersion));
  }
  Report r;
  r.schema_version = version;
  r.kind = Str(j, "kind");
  r.title = Str(j, "title");
  if (j.contains("meta") && j["meta"].is_object()) {
    Flatten(j["meta"], "", [&](std::string k, Value v) { r.AddMeta(std::move(k), std::move(v)); });
  }
  if (j.contains("config") && j["config"].is_object()) {
    Flatten(j["config"], "",
            [&](std::string k, Value v) { r.config.emplace_back(std::move(k), std::move(v)); });
  }
  for (const Json& s : j["sections"]) {
    Status st = ReadSection(s, r);
    if (!st.ok()) return InvalidArgument(fmt::format("{}: {}", origin, st.message()));
  }
  if (auto it = j.find("diagnostics"); it != j.end() && it->is_array()) {
    for (const Json& d : *it) {
      if (!d.is_object()) continue;
      int64_t count =
          d.contains("count") && d["count"].is_number_integer() ? d["count"].get<int64_t>() : 1;
      // The registry, not the file, gives the severity.
      r.diagnostics.push_back(base::DiagnosticFromName(Str(d, "name"), count, Str(d, "message")));
    }
  }
  return r;
}

StatusOr<Report> ReadReportJson(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    if (err == ENOENT) return NotFound(fmt::format("{}: no such file", path));
    return InvalidArgument(fmt::format("{}: cannot be read: {}", path, std::strerror(err)));
  }
  std::ostringstream buf;
  buf << in.rdbuf();
  TRAINPROF_ASSIGN_OR_RETURN(Report r, ParseReportJson(buf.str(), path));
  AttachCsvRows(r, std::filesystem::path(path).parent_path().string());
  return r;
}

}  // namespace trainprof::report
