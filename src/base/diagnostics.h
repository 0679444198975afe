// Every diagnostic trainprof can report, in one registry: its stable name, its severity and what
// it means for the figures. The trace reader, the system sampler and the rank merge take their
// severities from here; the data-quality section prints the meanings; docs/trace-analysis.md's
// table is tested against this list.
//
//   const base::DiagnosticKind* k = base::FindDiagnosticKind("truncated");
//   if (k && k->severity == base::DataSeverity::kError) exit_code = 4;
#pragma once

#include <string_view>
#include <vector>

namespace trainprof::base {

enum class DataSeverity {
  kInfo,      // nothing is lost; the figures stand
  kDataLoss,  // some input was skipped; the figures cover the rest
  kError,     // the figures cannot be trusted as they stand
};
const char* DataSeverityName(DataSeverity s);  // "info", "data loss", "error"

struct DiagnosticKind {
  std::string_view name;
  DataSeverity severity;
  std::string_view meaning;  // one sentence: what it means for the figures
};

const std::vector<DiagnosticKind>& DiagnosticKinds();
// nullptr for a name that is not registered.
const DiagnosticKind* FindDiagnosticKind(std::string_view name);
// The registered severity, or kDataLoss for a name that is not registered.
DataSeverity SeverityOf(std::string_view name);

}  // namespace trainprof::base
