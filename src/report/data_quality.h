// The data-quality section: every diagnostic of a report with its count, its severity (info,
// data loss, error) and what it means for the figures, from the registry in base/diagnostics.h.
//
//   report::AddDataQualitySection(r);   // after every diagnostic has been added
#pragma once

#include "report/report.h"

namespace trainprof::report {

void AddDataQualitySection(Report& r);
// A registered diagnostic of error severity (base/diagnostics.h).
bool IsDataError(const Diagnostic& d);
// True when one fired (the CLI exits kExitDataError then).
bool HasDataError(const Report& r);

}  // namespace trainprof::report
