// The recommendation rules' names, checked when they compile: a candidate (findings.cc) and the
// rule's entry (finding_rules.cc) both name their rule by a RuleKey.
//
//   Candidate c = Make("dataloader", ...);  // a key not in kFindingRuleKeys does not compile
#pragma once

#include <string_view>

namespace trainprof::analysis {

// The recommendation rules' keys, in docs/trace-analysis.md's order. A rule's logic (a candidate
// in findings.cc) and its entry in finding_rules.cc both name it by a RuleKey, checked against
// this list when they compile (as a diagnostic's name is); a test holds every key to one entry.
inline constexpr std::string_view kFindingRuleKeys[] = {
    "dataloader",          "low_utilization", "tensor_cores",  "copies",       "communication",
    "memory_near_limit",   "host_wait",       "short_kernels", "launch_delay", "straggler",
    "waits_for_straggler", "rank_imbalance",  "graphs",        "truncated"};

class RuleKey {
 public:
  // A key not in kFindingRuleKeys does not compile.
  consteval RuleKey(const char* key) : key_(key) {  // NOLINT: implicit by design
    bool known = false;
    for (std::string_view k : kFindingRuleKeys) known = known || k == key_;
    if (!known) throw "not a finding rule: add it to kFindingRuleKeys and finding_rules.cc";
  }
  constexpr std::string_view key() const { return key_; }

 private:
  std::string_view key_;
};

}  // namespace trainprof::analysis
