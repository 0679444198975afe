// The run folder: created once per run, then filled with a report's files. Every way in uses
// these: the Session, a multi-rank run's rank 0 for the merged report, analyze and run.
//
//   TRAINPROF_ASSIGN_OR_RETURN(std::string dir, report::CreateRunDir(options.output, now_ns));
//   TRAINPROF_RETURN_IF_ERROR(report::WriteRendered(report::JsonRenderer(), r, dir + "/x.json"));
// The files of a finished run are written by report/run_writers.h.
#pragma once

#include <cstdint>
#include <string>

#include "report/renderer.h"
#include "report/report.h"
#include "trainprof/options.h"
#include "trainprof/status.h"

namespace trainprof::report {

// output.run_dir as given (created if missing), else <dir>/<UTC time>-<name>[-N], a new folder;
// either way claimed for this process (report/run_dir_lock.h). Errors name the folder: it could
// not be created; another process is writing it; output.run_dir holds an earlier run and
// output.overwrite is off.
StatusOr<std::string> CreateRunDir(const Options::Output& out, int64_t unix_ns);

// Streams `renderer`'s rendering of `r` into `path`, atomically. Errors: the file cannot be
// written (named).
Status WriteRendered(const Renderer& renderer, const Report& r, const std::string& path);

}  // namespace trainprof::report
