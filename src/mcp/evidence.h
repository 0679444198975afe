// The evidence behind a finding, for the findings and explain tools: its rule's definition and
// threshold (analysis/finding_rules.h), the doc section that explains it, and the rows of the
// tables that show its figure, the finding's ranks only, largest first.
//
//   Json e = FindingEvidence(report, section, 0, 5);   // "recommendations#1", 5 rows a table
#pragma once

#include <cstdint>

#include "mcp/protocol.h"
#include "report/report.h"

namespace trainprof::mcp {

// The finding `index` of `s` with its evidence: FindingJson's members, then "rule_title",
// "definition", "threshold", "doc" and "evidence": [{"table", "column", "rows", "total_rows"}]
// (tables the report does not have are left out). A finding of no rule gets its section's doc.
Json FindingEvidence(const report::Report& r, const report::Section& s, size_t index,
                     int64_t rows_per_table);

// "overview/step_breakdown_average" rows of `ranks` (all when empty or the table has no rank
// column), sorted by `column` (largest first) when it is numeric, at most `limit`.
Json EvidenceRows(const report::Table& t, const std::vector<int64_t>& ranks,
                  const std::string& column, int64_t limit);

}  // namespace trainprof::mcp
