// Claiming a run folder: one process writes a run folder at a time, and a folder that holds an
// earlier run is only reused when asked (output.overwrite), its old files removed first.
//
//   TRAINPROF_RETURN_IF_ERROR(report::ClaimRunDir("runs/exp1", /*overwrite=*/false,
//                                                 /*fresh=*/false));
#pragma once

#include <string>

#include "trainprof/status.h"

namespace trainprof::report {

// Locks `dir` (an existing folder) for this process until it exits, through an flock on
// <dir>/.trainprof.lock; a folder this process holds already is claimed again at once. Unless
// `fresh` (a folder just made for this run), a folder that holds an earlier run (its lock file,
// report.json, summary.txt or trace.json) is refused, or with `overwrite` emptied of that run's
// files (report.*, summary.txt, trace.json, *.csv, *.txt, rank<N>/, session/, run<N>/; nothing
// else). Errors (FailedPrecondition, naming the folder): another process holds it, with its
// pid; it holds an earlier run and `overwrite` is off; a file could not be removed or created.
Status ClaimRunDir(const std::string& dir, bool overwrite, bool fresh);

// Lets go of `dir`'s lock, held by this process through ClaimRunDir (a folder not held: nothing),
// once its run is complete: its lock file stays and marks the folder as holding a run.
void ReleaseRunDir(const std::string& dir);

// Whether `dir` holds an earlier run (its lock file, report.json, summary.txt or trace.json):
// what ClaimRunDir refuses without `overwrite`.
bool HoldsEarlierRun(const std::string& dir);

}  // namespace trainprof::report
