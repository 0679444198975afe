#include "report/json.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>

namespace trainprof::report {
namespace {

using Json = nlohmann::ordered_json;

Json ToJson(const Value& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return *i;
  if (const auto* d = std::get_if<double>(&v)) return std::isfinite(*d) ? Json(*d) : Json();
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  if (const auto* b = std::get_if<bool>(&v)) return *b;
  return nullptr;
}

// Sets obj["a"]["b"]["c"] for the key "a.b.c".
void SetDotted(Json& obj, const std::string& key, Json value) {
  Json* cur = &obj;
  size_t start = 0;
  for (size_t dot = key.find('.'); dot != std::string::npos; dot = key.find('.', start)) {
    Json& next = (*cur)[key.substr(start, dot - start)];
    if (!next.is_object()) next = Json::object();
    cur = &next;
    start = dot + 1;
  }
  (*cur)[key.substr(start)] = std::move(value);
}

Json RowsJson(const Table& t, const std::vector<std::vector<Value>>& rows) {
  Json out = Json::array();
  for (const auto& row : rows) {
    Json o = Json::object();
    for (size_t i = 0; i < t.columns.size(); ++i) {
      o[t.columns[i].key] = i < row.size() ? ToJson(row[i]) : Json();
    }
    out.push_back(std::move(o));
  }
  return out;
}

Json TableJson(const Table& t) {
  Json j = Json::object();
  j["id"] = t.id;
  j["title"] = t.title;
  j["kind"] = t.kind == TableKind::kSeries   ? "series"
              : t.kind == TableKind::kDetail ? "detail"
                                             : "table";
  Json cols = Json::array();
  for (const Column& c : t.columns) {
    Json col = {{"key", c.key}, {"title", c.title}, {"unit", UnitName(c.unit)}};
    if (c.change) col["change"] = true;
    cols.push_back(std::move(col));
  }
  j["columns"] = std::move(cols);
  j["rows"] = RowsJson(t, t.rows);
  j["footer"] = RowsJson(t, t.footer);
  j["notes"] = t.notes;
  return j;
}

Json SectionJson(const Section& s) {
  Json j = Json::object();
  j["id"] = s.id;
  j["title"] = s.title;
  j["notes"] = s.notes;
  Json findings = Json::array();
  for (const Finding& f : s.findings) {
    findings.push_back({{"severity", SeverityName(f.severity)}, {"text", f.text}});
  }
  j["findings"] = std::move(findings);
  Json metrics = Json::object();
  for (const Metric& m : s.metrics) {
    Json mj = {{"title", m.title}, {"value", ToJson(m.value)}, {"unit", UnitName(m.unit)}};
    if (!m.suffix.empty()) mj["suffix"] = m.suffix;
    metrics[m.key] = std::move(mj);
  }
  j["metrics"] = std::move(metrics);
  Json tables = Json::array();
  for (const Table& t : s.tables) tables.push_back(TableJson(t));
  j["tables"] = std::move(tables);
  return j;
}

}  // namespace

void JsonRenderer::Render(const Report& r, std::ostream& out) const {
  Json j = Json::object();
  j["schema_version"] = r.schema_version;
  j["kind"] = r.kind;
  j["title"] = r.title;
  Json meta = Json::object();
  for (const MetaEntry& m : r.meta) SetDotted(meta, m.key, ToJson(m.value));
  j["meta"] = std::move(meta);
  Json config = Json::object();
  for (const auto& [k, v] : r.config) SetDotted(config, k, ToJson(v));
  j["config"] = std::move(config);
  j["sections"] = Json::array();  // written one by one below: never the whole tree at once
  Json diags = Json::array();
  for (const Diagnostic& d : r.diagnostics) {
    diags.push_back({{"severity", SeverityName(d.severity)},
                     {"name", d.name},
                     {"count", d.count},
                     {"message", d.message}});
  }
  j["diagnostics"] = std::move(diags);
  const std::string top = j.dump(1, ' ', false, Json::error_handler_t::replace);
  const std::string_view empty = "\"sections\": []";
  const size_t at = top.find(empty);
  out << std::string_view(top).substr(0, at);
  out << "\"sections\": [";
  for (size_t i = 0; i < r.sections.size(); ++i) {
    // The section as dump(1) writes it two levels down: each line indented by two more spaces
    // (strings hold no raw newline: dump escapes them).
    std::string text =
        SectionJson(r.sections[i]).dump(1, ' ', false, Json::error_handler_t::replace);
    out << (i == 0 ? "\n  " : ",\n  ");
    size_t from = 0;
    for (size_t nl = text.find('\n'); nl != std::string::npos; nl = text.find('\n', from)) {
      out << std::string_view(text).substr(from, nl + 1 - from) << "  ";
      from = nl + 1;
    }
    out << std::string_view(text).substr(from);
  }
  out << (r.sections.empty() ? "]" : "\n ]") << std::string_view(top).substr(at + empty.size())
      << '\n';
}

std::string RenderJsonString(const Report& r) {
  std::ostringstream s;
  JsonRenderer().Render(r, s);
  return s.str();
}

}  // namespace trainprof::report
