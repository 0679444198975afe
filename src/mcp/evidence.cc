#include "mcp/evidence.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "analysis/finding_rules.h"
#include "analysis/sections/sections.h"
#include "mcp/report_parts.h"

namespace trainprof::mcp {

namespace {

// A rank cell is a number, or a label that starts with one ("3", "3 (b/trace.json)").
bool RankIn(const report::Value& v, const std::vector<int64_t>& ranks) {
  int64_t r = -1;
  if (const auto* s = std::get_if<std::string>(&v)) {
    if (std::from_chars(s->data(), s->data() + s->size(), r).ec != std::errc()) return false;
  } else if (double x = report::AsNumber(v); !std::isnan(x)) {
    r = static_cast<int64_t>(x);
  } else {
    return false;
  }
  return std::find(ranks.begin(), ranks.end(), r) != ranks.end();
}

}  // namespace

Json EvidenceRows(const report::Table& t, const std::vector<int64_t>& ranks,
                  const std::string& column, int64_t limit) {
  const int rank_col = t.ColumnIndex("rank");
  const int sort_col = column.empty() ? -1 : t.ColumnIndex(column);
  std::vector<std::vector<report::Value>> rows;
  t.ForEachRowBlock([&](const std::vector<std::vector<report::Value>>& block) {
    for (const auto& row : block)
      if (rank_col < 0 || ranks.empty() || RankIn(row[rank_col], ranks)) rows.push_back(row);
  });
  const size_t total = rows.size();
  if (sort_col >= 0) {
    auto key = [&](const std::vector<report::Value>& row) {
      const double x = report::AsNumber(row[sort_col]);
      return std::isnan(x) ? -INFINITY : x;
    };
    std::stable_sort(rows.begin(), rows.end(),
                     [&](const auto& a, const auto& b) { return key(a) > key(b); });
  }
  Json out = Json::array();
  for (size_t i = 0; i < rows.size() && static_cast<int64_t>(i) < limit; ++i)
    out.push_back(RowJson(t, rows[i]));
  return {{"rows", std::move(out)}, {"total_rows", total}};
}

Json FindingEvidence(const report::Report& r, const report::Section& s, size_t index,
                     int64_t rows_per_table) {
  const report::Finding& f = s.findings.at(index);
  Json j = FindingJson(s, index, f);
  const analysis::FindingRule* rule = analysis::FindFindingRule(f.rule);
  if (rule == nullptr) {
    j["doc"] = analysis::DocOfSection(s.id);
    return j;
  }
  j["rule_title"] = rule->title;
  j["definition"] = rule->definition;
  j["threshold"] = rule->threshold;
  j["doc"] = analysis::DocOfSection(rule->section);
  Json evidence = Json::array();
  for (const analysis::EvidenceTable& e : rule->evidence) {
    const report::Table* t = FindTableById(r, e.table, nullptr);
    if (t == nullptr) continue;
    Json rows = EvidenceRows(*t, f.ranks, e.column, rows_per_table);
    Json item = {{"table", e.table}, {"title", t->title}};
    if (!e.column.empty()) item["column"] = e.column;
    item["rows"] = std::move(rows["rows"]);
    item["total_rows"] = std::move(rows["total_rows"]);
    evidence.push_back(std::move(item));
  }
  j["evidence"] = std::move(evidence);
  return j;
}

}  // namespace trainprof::mcp
