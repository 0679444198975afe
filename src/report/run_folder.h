// The run folder: created once per run, then filled with a report's files. Every way in uses
// these: the Session, a multi-rank run's rank 0 for the merged report, analyze and run.
//
//   TRAINPROF_ASSIGN_OR_RETURN(std::string dir, report::CreateRunDir(options.output, now_ns));
//   std::string summary;
//   TRAINPROF_RETURN_IF_ERROR(report::WriteReportFiles(report, dir, /*csv=*/true, &summary));
#pragma once

#include <cstdint>
#include <string>

#include "report/report.h"
#include "trainprof/options.h"
#include "trainprof/status.h"

namespace trainprof::report {

// output.run_dir as given (created if missing), else <dir>/<UTC time>-<name>[-N], a new folder;
// either way claimed for this process (report/run_dir_lock.h). Errors name the folder: it could
// not be created; another process is writing it; output.run_dir holds an earlier run and
// output.overwrite is off.
StatusOr<std::string> CreateRunDir(const Options::Output& out, int64_t unix_ns);

// Renders `r` for the terminal into *summary and writes report.json, summary.txt, report.html
// and (with `csv`) one CSV per table into `dir`. Errors: the first file not written (the others
// are still attempted).
Status WriteReportFiles(const Report& r, const std::string& dir, bool csv, std::string* summary);

}  // namespace trainprof::report
