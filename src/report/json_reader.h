// Reads report.json (schema_version 1, layout in report/json.h) back into a Report, for the tools
// that work on finished runs: report.html of an old run, `trainprof compare`, the run history.
//
//   TRAINPROF_ASSIGN_OR_RETURN(report::Report r, report::ReadReportJson("runs/x/report.json"));
//
// Meta and config keys come back dotted ("host.name"), every meta entry shown in the terminal;
// integers come back as int64, other numbers as double, null as an empty value.
#pragma once

#include <string>
#include <string_view>

#include "report/report.h"
#include "trainprof/status.h"

namespace trainprof::report {

// Errors (one line, naming `origin`): not JSON (with the byte offset), not a trainprof report,
// a schema_version newer than this build reads (FailedPrecondition), a field of the wrong type.
StatusOr<Report> ParseReportJson(std::string_view text, const std::string& origin);

// As ParseReportJson on the file's contents; NotFound when the file does not exist. A csv-only
// table's rows come from the CSV beside the file (report/csv_file_rows.h).
StatusOr<Report> ReadReportJson(const std::string& path);

// The unit named by UnitName(), or kText for a name this build does not know.
Unit UnitFromName(std::string_view name);

}  // namespace trainprof::report
