// `table`: one table of a run's report, filtered, sorted and a page at a time; never the whole
// of a many-rank table at once.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "mcp/arguments.h"
#include "mcp/report_parts.h"
#include "mcp/run_cache.h"

namespace trainprof::mcp {

namespace {

using Row = std::vector<report::Value>;

struct Condition {
  int column = -1;
  std::string op;
  Json value;
};

bool Holds(const Condition& c, const Row& row) {
  const report::Value& v = row[c.column];
  if (c.op == "contains") {
    const auto* s = std::get_if<std::string>(&v);
    return s != nullptr && c.value.is_string() &&
           s->find(c.value.get<std::string>()) != std::string::npos;
  }
  if (c.value.is_boolean()) {
    const auto* b = std::get_if<bool>(&v);
    const bool eq = b != nullptr && *b == c.value.get<bool>();
    return c.op == "=" ? eq : !eq;  // Conditions allows = and != only
  }
  if (c.value.is_string()) {
    const auto* s = std::get_if<std::string>(&v);
    const bool eq = s != nullptr && *s == c.value.get<std::string>();
    return c.op == "=" ? eq : c.op == "!=" ? !eq : false;
  }
  const double x = report::AsNumber(v), y = c.value.is_number() ? c.value.get<double>() : NAN;
  if (c.op == "!=") return !(x == y);
  if (std::isnan(x) || std::isnan(y)) return false;
  if (c.op == "=") return x == y;
  if (c.op == "<") return x < y;
  if (c.op == "<=") return x <= y;
  if (c.op == ">") return x > y;
  return x >= y;
}

StatusOr<int> ColumnOf(const report::Table& t, const std::string& key, const char* what) {
  const int c = t.ColumnIndex(key);
  if (c >= 0) return c;
  std::vector<std::string> keys;
  for (const report::Column& col : t.columns) keys.push_back(col.key);
  return BadCall(fmt::format("{}: table {} has no column '{}'; its columns: {}", what, t.id, key,
                             fmt::join(keys, ", ")));
}

StatusOr<std::vector<Condition>> Conditions(const report::Table& t, const Json& args) {
  std::vector<Condition> out;
  if (!args.contains("where")) return out;
  for (const Json& w : args["where"]) {
    TRAINPROF_ASSIGN_OR_RETURN(int c, ColumnOf(t, w["column"].get<std::string>(), "where"));
    const std::string op = w["op"].get<std::string>();
    const bool bool_column = t.columns[static_cast<size_t>(c)].unit == report::Unit::kBool;
    if (bool_column != w["value"].is_boolean())
      return BadCall(
          fmt::format("where: column '{}' of table {} holds {}: compare it with {}",
                      t.columns[c].key, t.id, bool_column ? "true or false" : "numbers or text",
                      bool_column ? "a JSON boolean (true, false)" : "a number or a string"));
    if (bool_column && op != "=" && op != "!=")
      return BadCall(fmt::format("where: column '{}' holds true or false: use = or !=, not {}",
                                 t.columns[c].key, op));
    out.push_back({c, op, w["value"]});
  }
  return out;
}

// Largest first when `descending`; empty cells last either way.
void SortRows(std::vector<Row>& rows, int c, bool descending) {
  std::stable_sort(rows.begin(), rows.end(), [c, descending](const Row& a, const Row& b) {
    const auto *sa = std::get_if<std::string>(&a[c]), *sb = std::get_if<std::string>(&b[c]);
    if (sa != nullptr && sb != nullptr) return descending ? *sa > *sb : *sa < *sb;
    const double x = report::AsNumber(a[c]), y = report::AsNumber(b[c]);
    if (std::isnan(x)) return false;
    if (std::isnan(y)) return true;
    return descending ? x > y : x < y;
  });
}

StatusOr<Json> Page(const report::Table& t, const Json& args, const Limits& limits) {
  TRAINPROF_ASSIGN_OR_RETURN(std::vector<Condition> where, Conditions(t, args));
  std::vector<Row> rows;
  size_t total = 0;
  t.ForEachRowBlock([&](const std::vector<Row>& block) {
    total += block.size();
    for (const Row& row : block)
      if (std::all_of(where.begin(), where.end(), [&](const auto& c) { return Holds(c, row); }))
        rows.push_back(row);
  });
  if (args.contains("sort_by")) {
    TRAINPROF_ASSIGN_OR_RETURN(int c, ColumnOf(t, args["sort_by"].get<std::string>(), "sort_by"));
    SortRows(rows, c, args.value("descending", true));
  }
  const int64_t offset = args.value("offset", int64_t{0});
  const int64_t limit = std::min(args.value("limit", limits.default_rows), limits.max_rows);
  Json page = Json::array();
  for (int64_t i = offset; i < static_cast<int64_t>(rows.size()) && i < offset + limit; ++i)
    page.push_back(RowJson(t, rows[i]));
  const size_t dropped = FitChars(page, limits.max_chars);
  const int64_t returned = static_cast<int64_t>(page.size());
  Json out = {{"total_rows", total},
              {"matched_rows", rows.size()},
              {"offset", offset},
              {"returned", returned},
              {"rows", std::move(page)}};
  const int64_t next = offset + returned;
  if (next < static_cast<int64_t>(rows.size())) {
    out["more"] =
        fmt::format("{} more row{} match{}: ask again with offset={}{}", rows.size() - next,
                    rows.size() - next == 1 ? "" : "s", rows.size() - next == 1 ? "es" : "", next,
                    dropped > 0 ? " (this page was cut to fit the size limit)" : "");
  }
  return out;
}

StatusOr<Json> TableCall(const Json& args, ToolContext& ctx) {
  TRAINPROF_ASSIGN_OR_RETURN(auto run, ctx.cache->Get(args, ctx));
  const std::string id = args["table"].get<std::string>();
  const report::Section* section = nullptr;
  const report::Table* t = FindTableById(run->report(), id, &section);
  if (t == nullptr) {
    return NotFound(fmt::format("no table '{}' in this report; its tables: {}", id,
                                fmt::join(TableIds(run->report()), ", ")));
  }
  TRAINPROF_ASSIGN_OR_RETURN(Json page, Page(*t, args, ctx.limits));
  Json out = {{"table", TableId(*section, *t)}, {"title", t->title}, {"columns", ColumnsJson(*t)}};
  for (auto& [key, value] : page.items()) out[key] = std::move(value);
  Json footer = Json::array();
  for (const auto& row : t->footer) footer.push_back(RowJson(*t, row));
  if (!footer.empty()) out["footer"] = std::move(footer);
  if (!t->notes.empty()) out["notes"] = t->notes;
  return out;
}

Json WhereSchema() {
  Json cond = ObjectSchema(
      {{"column", StringSchema("a column key")},
       {"op", EnumSchema("how the cell compares", {"=", "!=", "<", "<=", ">", ">=", "contains"})},
       {"value",
        {{"anyOf",
          Json::array({{{"type", "string"}}, {{"type", "number"}}, {{"type", "boolean"}}})},
         {"description", "a number, a string, or for a true/false column a JSON boolean"}}}},
      {"column", "op", "value"});
  return {{"type", "array"},
          {"items", std::move(cond)},
          {"description", "conditions every returned row meets"}};
}

}  // namespace

Tool TableTool() {
  Json props = RunProperties();
  props["table"] = StringSchema(
      "the table's id as analyze lists it (\"hta/idle_time_breakdown\"), or its bare id when "
      "only one section has it");
  props["where"] = WhereSchema();
  props["sort_by"] = StringSchema("a column key to sort by");
  props["descending"] = {{"type", "boolean"},
                         {"description", "with sort_by: largest first (the default)"}};
  props["offset"] = IntegerSchema("rows to skip (paging)", 0, int64_t{1} << 40);
  props["limit"] = IntegerSchema("rows to return (default 20, at most 500)", 1, 500);
  return {"table", "Rows of one report table",
          "Returns rows of one table of a run's report (ids from analyze), in report.json's "
          "keys and base units (seconds, bytes, percent), with optional conditions, sorting and "
          "paging. Says how many rows matched and how to ask for the next page.",
          ObjectSchema(std::move(props), {"path", "table"}), TableCall};
}

}  // namespace trainprof::mcp
