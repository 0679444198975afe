// Runs a helper program (git) and captures what it prints.
//
//   TRAINPROF_ASSIGN_OR_RETURN(std::string out, base::RunAndCapture({"git", "rev-parse", "HEAD"}));
#pragma once

#include <string>
#include <vector>

#include "trainprof/status.h"

namespace trainprof::base {

// Starts argv[0] (looked up on PATH) in `cwd` (empty: this process's), with stdin from /dev/null,
// and returns its standard output once it exits. Errors: NotFound when it cannot be started,
// FailedPrecondition when it exits non-zero (the message names the program and its first line
// of stderr).
StatusOr<std::string> RunAndCapture(const std::vector<std::string>& argv,
                                    const std::string& cwd = "");

}  // namespace trainprof::base
