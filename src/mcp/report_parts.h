// A Report's parts as the MCP tools return them, in report.json's spelling (report/json.h): the
// same keys, units and values (NaN as null), so an answer can be checked against the CLI's
// report.json. Tables are named "section/table"; findings "section#N" (1 for the first).
//
//   const report::Table* t = FindTableById(r, "hta/idle_time_breakdown", &section);
//   Json row = RowJson(*t, t->rows[0]);   // {"rank": 0, "stream": 7, "host_wait_s": 0.012, ...}
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "mcp/protocol.h"
#include "report/json_value.h"
#include "report/report.h"

namespace trainprof::mcp {

// {"id": "overview.avg_step_time_s", "title", "value", "unit", "text": "77.5 ms"}.
Json MetricJson(const report::Section& s, const report::Metric& m);

// {"id": "recommendations#1", "severity", "text", and "rule", "ranks", "saves_s" when set}.
Json FindingJson(const report::Section& s, size_t index, const report::Finding& f);

std::string TableId(const report::Section& s, const report::Table& t);

// The table named "section/table", or by its id alone when only one section has it; nullptr
// when there is none (or the bare id is ambiguous). `section` (may be null) gets its section.
const report::Table* FindTableById(const report::Report& r, std::string_view id,
                                   const report::Section** section);

// Every table id of the report, in report order ("did you mean" lists).
std::vector<std::string> TableIds(const report::Report& r);

Json ColumnsJson(const report::Table& t);
Json RowJson(const report::Table& t, const std::vector<report::Value>& row);

// {"severity", "name", "count", "message"} per diagnostic, as report.json has them.
Json DiagnosticsJson(const report::Report& r);

// The finding "section#N", or nullptr.
const report::Finding* FindFindingById(const report::Report& r, std::string_view id,
                                       const report::Section** section);

}  // namespace trainprof::mcp

namespace trainprof::mcp {

// Drops items from the end of the array `items` until its JSON is at most `max_chars` long;
// returns how many were dropped.
size_t FitChars(Json& items, size_t max_chars);

}  // namespace trainprof::mcp

namespace trainprof::mcp {

// A whole report, bounded: each section's metrics, findings and notes, and each table's first
// `rows_per_table` rows with its row count (`table` pages through the rest where the report is
// kept). For the reports a call makes and does not keep (diff, compare).
Json ReportDigest(const report::Report& r, int64_t rows_per_table, size_t max_chars);

}  // namespace trainprof::mcp
