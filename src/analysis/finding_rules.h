// What each rule of the recommendations (findings.h) means: its definition, its threshold (made
// from the constants the rule uses), the tables that hold its evidence, and the doc section that
// explains it. `trainprof mcp`'s findings and explain tools quote it, so an agent can cite the
// rows and the threshold behind a finding instead of guessing.
//
//   const FindingRule* r = FindFindingRule("dataloader");
//   r->evidence[0].table;  // "overview/step_breakdown_average"
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "analysis/rule_keys.h"

namespace trainprof::analysis {

// A table that shows a rule's figure: "section/table", and the column that holds it ("" when the
// whole row is the evidence). Rows are the finding's ranks' when the table has a rank column.
struct EvidenceTable {
  std::string table;
  std::string column;
};

struct FindingRule {
  RuleKey key;             // Candidate::key, report::Finding::rule: "dataloader"
  std::string title;       // "Data loading stalls the step"
  std::string definition;  // what the rule measures, in one or two sentences
  std::string threshold;   // when it fires: "DataLoader > 5% of the average step"
  std::string section;     // the report section whose doc explains it ("recommendations")
  std::vector<EvidenceTable> evidence;
};

// Every rule, in the order of docs/trace-analysis.md's Recommendations table.
const std::vector<FindingRule>& FindingRules();

// The rule of `key`, or nullptr.
const FindingRule* FindFindingRule(std::string_view key);

}  // namespace trainprof::analysis
