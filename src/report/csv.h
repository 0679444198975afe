// CSV: one file per table, named after the table id (time_report.csv), header row of column
// keys, values in base units (seconds, bytes, percent) at full precision, footer rows (Total)
// last. Each section's headline metrics go to <section>_metrics.csv.
//
//   std::vector<std::string> written;
//   TRAINPROF_RETURN_IF_ERROR(report::WriteCsvFiles(report, "runs/x", &written));
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "report/report.h"
#include "trainprof/status.h"

namespace trainprof::report {

// RFC 4180 quoting: fields with a comma, quote or newline are quoted, quotes doubled.
void RenderCsvTable(const Table& table, std::ostream& out);
void RenderCsvMetrics(const Section& section, std::ostream& out);

// Writes every table (and every section's metrics) of `report` to `dir`, each file atomically.
// `written` (may be null) receives the file names. Errors name the file; the other files are
// still written.
Status WriteCsvFiles(const Report& report, const std::string& dir,
                     std::vector<std::string>* written);

}  // namespace trainprof::report
