#include "report/data_quality.h"

#include <algorithm>

#include "base/diagnostics.h"
#include "report/packed_rows.h"

namespace trainprof::report {

// More diagnostics than this are in diagnostics.csv only, as the analyses' long per-rank tables
// (analysis/sections/sections.h, kMaxJsonRowsManyRanks).
constexpr size_t kMaxCsvOnlyDiagnostics = 1000;

void AddDataQualitySection(Report& r) {
  Section& s = r.AddSection("data_quality", "Data quality");
  Table& t = s.AddTable("diagnostics", "What the input lacked, and what it means for the figures",
                        {{"diagnostic", "Diagnostic", Unit::kText},
                         {"severity", "Severity", Unit::kText},
                         {"count", "Count", Unit::kCount},
                         {"meaning", "What it means", Unit::kText},
                         {"message", "Where", Unit::kText}});
  int64_t errors = 0, losses = 0;
  for (const Diagnostic& d : r.diagnostics) {
    const base::DataSeverity sev = d.severity();
    errors += sev == base::DataSeverity::kError;
    losses += sev == base::DataSeverity::kDataLoss;
    t.rows.push_back({std::string(d.name()), std::string(base::DataSeverityName(sev)), d.count,
                      std::string(d.meaning()), d.message});
  }
  // One per rank file of 10,000 ranks: the terminal says where they are, report.json keeps them
  // in its own "diagnostics" list only.
  t.MarkLong();
  if (t.rows.size() > kMaxCsvOnlyDiagnostics) t.KeepInCsvOnly(), PackRows(t);
  s.AddMetric("errors", "Diagnostics of error severity", errors, Unit::kCount);
  s.AddMetric("data_loss", "Diagnostics of data-loss severity", losses, Unit::kCount);
  if (r.diagnostics.empty()) s.notes.push_back("No diagnostic: the input was read whole.");
}

bool IsDataError(const Diagnostic& d) { return d.severity() == base::DataSeverity::kError; }

bool HasDataError(const Report& r) {
  return std::any_of(r.diagnostics.begin(), r.diagnostics.end(), IsDataError);
}

}  // namespace trainprof::report
