#include "report/json.h"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/text.h"
#include "report/json_value.h"

namespace trainprof::report {
namespace {

using Json = nlohmann::ordered_json;

Json RowsJson(const Table& t, const std::vector<std::vector<Value>>& rows) {
  Json out = Json::array();
  for (const auto& row : rows) {
    Json o = Json::object();
    for (size_t i = 0; i < t.columns.size(); ++i) {
      o[t.columns[i].key] = i < row.size() ? ValueToJson(row[i]) : Json();
    }
    out.push_back(std::move(o));
  }
  return out;
}

// The JSON below is what nlohmann's dump(1) writes for the same values, in the same layout,
// written straight from the rows: a 1,000-rank report holds a million cells, and building them
// as a DOM first took most of report.json's time. renderers_test.cc checks the two agree.
void Indent(std::string& out, int spaces) { out.append(static_cast<size_t>(spaces), ' '); }

// `text` (a dump(1) at level 0) as it reads `extra` levels down.
void AppendIndented(std::string& out, std::string_view text, int extra) {
  size_t from = 0;
  for (size_t nl = text.find('\n'); nl != std::string_view::npos; nl = text.find('\n', from)) {
    out.append(text.substr(from, nl + 1 - from));
    Indent(out, extra);
    from = nl + 1;
  }
  out.append(text.substr(from));
}

void AppendString(std::string& out, std::string_view s) {
  if (!base::IsValidUtf8(s)) {  // nlohmann's replacement of malformed bytes
    out += Json(std::string(s)).dump(-1, ' ', false, Json::error_handler_t::replace);
    return;
  }
  out.push_back('"');
  base::AppendJsonEscaped(out, s);
  out.push_back('"');
}

void AppendValue(std::string& out, const Value& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) {
    out += fmt::format_int(*i).c_str();
  } else if (const auto* d = std::get_if<double>(&v); d != nullptr && std::isfinite(*d)) {
    char buf[64];
    out.append(buf, nlohmann::detail::to_chars(buf, buf + sizeof buf, *d));
  } else if (const auto* str = std::get_if<std::string>(&v)) {
    AppendString(out, *str);
  } else if (const auto* b = std::get_if<bool>(&v)) {
    out += *b ? "true" : "false";
  } else {
    out += "null";
  }
}

// Dotted keys ("files.12" -> {"files": {"12": ...}}) nested as an ordered_json nests them set
// one by one (obj["files"]["12"] = ...), and written the way its dump(1) writes that object,
// without the object: a 100,000-rank report's meta holds a line a file, and the JSON tree of
// them (a value, a key and a copy of the path each, each key found by a linear search of the
// keys before it: 13.7 s) cost more time and memory than the rest of the report's head. A key's
// first appearance fixes its place; a later leaf replaces what was there, a later key below a
// leaf turns it into an object.
class DottedKeys {
 public:
  DottedKeys() : nodes_(1) {}
  void Set(std::string_view key, const Value& value) {
    uint32_t cur = 0;
    for (size_t dot = key.find('.'); dot != std::string_view::npos; dot = key.find('.')) {
      cur = Child(cur, key.substr(0, dot));
      nodes_[cur].value = nullptr;  // an object, if it was a leaf
      key.remove_prefix(dot + 1);
    }
    const uint32_t leaf = Child(cur, key);
    Drop(leaf);
    nodes_[leaf].value = &value;
  }
  // The object, its opening brace where `text` ends, at `level`; the text so far goes to `out`
  // as it grows (a line a file of 100,000).
  void Write(std::ostream& out, std::string& text, int level) const { Append(out, text, 0, level); }

 private:
  struct Node {
    std::string_view key;
    const Value* value = nullptr;  // null: an object
    std::vector<uint32_t> children;
  };
  struct Key {
    uint32_t parent;
    std::string_view name;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<std::string_view>()(k.name) ^ (size_t{k.parent} * 0x9E3779B97F4A7C15u);
    }
  };
  uint32_t Child(uint32_t parent, std::string_view name) {
    auto [it, added] = index_.try_emplace({parent, name}, static_cast<uint32_t>(nodes_.size()));
    if (!added) return it->second;
    nodes_[parent].children.push_back(it->second);
    nodes_.push_back({.key = name});
    return it->second;
  }
  // The node's children forgotten (a leaf takes its place).
  void Drop(uint32_t node) {
    for (uint32_t c : nodes_[node].children) {
      Drop(c);
      index_.erase({node, nodes_[c].key});
    }
    nodes_[node].children.clear();
  }
  void Append(std::ostream& os, std::string& out, uint32_t node, int level) const;
  std::vector<Node> nodes_;  // [0]: the object itself
  std::unordered_map<Key, uint32_t, KeyHash> index_;
};

void DottedKeys::Append(std::ostream& os, std::string& out, uint32_t node, int level) const {
  const Node& n = nodes_[node];
  if (n.value != nullptr) return AppendValue(out, *n.value);
  if (n.children.empty()) {
    out += "{}";
    return;
  }
  out += "{\n";
  for (size_t i = 0; i < n.children.size(); ++i) {
    Indent(out, level + 1);
    AppendString(out, nodes_[n.children[i]].key);
    out += ": ";
    Append(os, out, n.children[i], level + 1);
    out += i + 1 < n.children.size() ? ",\n" : "\n";
    if (constexpr size_t kFlushBytes = 1 << 16; out.size() >= kFlushBytes) {
      os << out;
      out.clear();
    }
  }
  Indent(out, level);
  out += "}";
}

// rows as an array of {"<key>": value} objects whose opening bracket is at `level`.
void AppendRows(std::string& out, const Table& t, const std::vector<std::vector<Value>>& rows,
                int level) {
  if (rows.empty()) {
    out += "[]";
    return;
  }
  std::vector<std::string> keys;
  for (const Column& c : t.columns) {
    std::string k;
    AppendString(k, c.key);
    keys.push_back(std::move(k) + ": ");
  }
  out += "[\n";
  for (size_t r = 0; r < rows.size(); ++r) {
    Indent(out, level + 1);
    if (keys.empty()) {
      out += "{}";
    } else {
      out += "{\n";
      for (size_t c = 0; c < keys.size(); ++c) {
        Indent(out, level + 2);
        out += keys[c];
        AppendValue(out, c < rows[r].size() ? rows[r][c] : Value());
        out += c + 1 < keys.size() ? ",\n" : "\n";
      }
      Indent(out, level + 1);
      out += "}";
    }
    out += r + 1 < rows.size() ? ",\n" : "\n";
  }
  Indent(out, level);
  out += "]";
}

bool UniqueKeys(const Table& t) {
  std::set<std::string_view> seen;
  for (const Column& c : t.columns)
    if (!seen.insert(c.key).second) return false;
  return true;
}

// A table's members after its columns: rows, footer and notes, then its closing brace.
void AppendTableTail(std::string& out, const Table& t, int level) {
  out += ",\n";
  Indent(out, level + 1);
  out += "\"rows\": ";
  AppendRows(out, t, t.csv_only ? std::vector<std::vector<Value>>{} : t.rows, level + 1);
  out += ",\n";
  Indent(out, level + 1);
  out += "\"footer\": ";
  AppendRows(out, t, t.footer, level + 1);
  out += ",\n";
  Indent(out, level + 1);
  out += "\"notes\": ";
  AppendIndented(out, Json(t.notes).dump(1, ' ', false, Json::error_handler_t::replace), level + 1);
  out += "\n";
  Indent(out, level);
  out += "}";
}

// A chart hint: its kind and the members that differ from the defaults.
Json ChartJson(const ChartHint& h) {
  Json j = Json::object();
  j["kind"] = h.kind == ChartKind::kBars ? "bars" : h.kind == ChartKind::kLines ? "lines" : "none";
  auto text = [&](const char* key, const std::string& v) {
    if (!v.empty()) j[key] = v;
  };
  text("id", h.id);
  text("title", h.title);
  text("label", h.label);
  j["values"] = h.values;
  if (!h.names.empty()) j["names"] = h.names;
  if (h.kind == ChartKind::kBars) {
    j["limit"] = h.limit;
    if (!h.horizontal) j["horizontal"] = false;
  }
  text("label_format", h.label_format);
  text("label_trim", h.label_trim);
  text("split_by", h.split_by);
  if (h.mark_peak) j["mark_peak"] = true;
  text("y_suffix", h.y_suffix);
  if (!h.highlight_key.empty())
    j["highlight"] = {{"key", h.highlight_key}, {"value", ValueToJson(h.highlight_value)}};
  return j;
}

// A table object whose opening brace is at `level`.
void AppendTable(std::string& out, const Table& t, int level) {
  Json head = Json::object();
  head["id"] = t.id;
  head["title"] = t.title;
  head["kind"] = t.kind == TableKind::kSeries   ? "series"
                 : t.kind == TableKind::kDetail ? "detail"
                                                : "table";
  Json cols = Json::array();
  for (const Column& c : t.columns) {
    Json col = {{"key", c.key}, {"title", c.title}, {"unit", UnitName(c.unit)}};
    if (c.change) col["change"] = true;
    cols.push_back(std::move(col));
  }
  head["columns"] = std::move(cols);
  if (!t.charts.empty() &&
      !t.csv_only) {  // report.html's charts, kept for reports rendered from this file
    Json charts = Json::array();
    for (const ChartHint& h : t.charts) charts.push_back(ChartJson(h));
    head["charts"] = std::move(charts);
  }
  if (t.csv_only) head["rows_in"] = t.id + ".csv";  // the rows are in that file only
  if (!UniqueKeys(t)) {  // a row object keeps one member per key, as nlohmann's does
    head["rows"] = RowsJson(t, t.csv_only ? std::vector<std::vector<Value>>{} : t.rows);
    head["footer"] = RowsJson(t, t.footer);
    head["notes"] = t.notes;
    AppendIndented(out, head.dump(1, ' ', false, Json::error_handler_t::replace), level);
    return;
  }
  std::string text = head.dump(1, ' ', false, Json::error_handler_t::replace);
  text.resize(text.size() - 2);  // "\n}"
  AppendIndented(out, text, level);
  AppendTableTail(out, t, level);
}

// A section object whose opening brace is at `level`.
void AppendSection(std::string& out, const Section& s, int level) {
  Json j = Json::object();
  j["id"] = s.id;
  j["title"] = s.title;
  j["notes"] = s.notes;
  if (!s.no_data.empty()) j["no_data"] = s.no_data;
  Json findings = Json::array();
  for (const Finding& f : s.findings) {
    Json fj = {{"severity", SeverityName(f.severity)}, {"text", f.text}};
    if (!f.rule.empty()) {
      fj["rule"] = f.rule;
      fj["ranks"] = f.ranks;
      fj["saves_s"] = ValueToJson(Value(f.saves_s));
    }
    findings.push_back(std::move(fj));
  }
  j["findings"] = std::move(findings);
  Json metrics = Json::object();
  for (const Metric& m : s.metrics) {
    Json mj = {{"title", m.title}, {"value", ValueToJson(m.value)}, {"unit", UnitName(m.unit)}};
    if (!m.suffix.empty()) mj["suffix"] = m.suffix;
    metrics[m.key] = std::move(mj);
  }
  j["metrics"] = std::move(metrics);
  j["tables"] = Json::array();
  std::string head = j.dump(1, ' ', false, Json::error_handler_t::replace);
  if (s.tables.empty()) return AppendIndented(out, head, level);
  head.resize(head.size() - 4);  // "[]\n}"
  AppendIndented(out, head, level);
  out += "[\n";
  for (size_t i = 0; i < s.tables.size(); ++i) {
    Indent(out, level + 2);
    AppendTable(out, s.tables[i], level + 2);
    out += i + 1 < s.tables.size() ? ",\n" : "\n";
  }
  Indent(out, level + 1);
  out += "]\n";
  Indent(out, level);
  out += "}";
}

// `rest` written up to `marker` (a member of the head, `"key": {}`), then the member with
// `keys` in place of its empty object; `rest` then starts after it.
void WriteInPlaceOf(std::ostream& out, std::string_view& rest, std::string_view marker,
                    const DottedKeys& keys) {
  const size_t at = rest.find(marker);
  const size_t key_end = marker.size() - 2;  // before "{}"
  out << rest.substr(0, at + key_end);
  std::string text;
  keys.Write(out, text, 1);
  out << text;
  rest.remove_prefix(at + marker.size());
}

}  // namespace

void JsonRenderer::Render(const Report& r, std::ostream& out) const {
  Json j = Json::object();
  j["schema_version"] = r.schema_version;
  j["kind"] = r.kind;
  j["title"] = r.title;
  j["meta"] = Json::object();     // written below from the dotted keys (DottedKeys)
  j["config"] = Json::object();   // the same
  j["sections"] = Json::array();  // written one by one below: never the whole tree at once
  Json diags = Json::array();
  for (const Diagnostic& d : r.diagnostics) {
    diags.push_back({{"severity", SeverityName(SeverityFor(d.severity()))},
                     {"name", d.name()},
                     {"count", d.count},
                     {"message", d.message}});
  }
  j["diagnostics"] = std::move(diags);
  const std::string top = j.dump(1, ' ', false, Json::error_handler_t::replace);
  std::string_view rest = top;
  DottedKeys meta, config;
  for (const MetaEntry& m : r.meta) meta.Set(m.key, m.value);
  for (const auto& [k, v] : r.config) config.Set(k, v);
  WriteInPlaceOf(out, rest, "\"meta\": {}", meta);
  WriteInPlaceOf(out, rest, "\"config\": {}", config);
  const std::string_view empty = "\"sections\": []";
  const size_t at = rest.find(empty);
  out << rest.substr(0, at);
  rest.remove_prefix(at + empty.size());
  out << "\"sections\": [";
  for (size_t i = 0; i < r.sections.size(); ++i) {
    std::string text;  // one section at a time: never the whole document in memory
    AppendSection(text, r.sections[i], 2);
    out << (i == 0 ? "\n  " : ",\n  ") << text;
  }
  out << (r.sections.empty() ? "]" : "\n ]") << rest << '\n';
}

std::string RenderJsonString(const Report& r) {
  std::ostringstream s;
  JsonRenderer().Render(r, s);
  return s.str();
}

nlohmann::ordered_json ValueToJson(const Value& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return *i;
  if (const auto* d = std::get_if<double>(&v)) return std::isfinite(*d) ? Json(*d) : Json();
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  if (const auto* b = std::get_if<bool>(&v)) return *b;
  return nullptr;
}

}  // namespace trainprof::report
