// The git commit a run was made from, and the commits before it, read with the `git` program in
// the folder trainprof runs in (so the run is tied to the code the user is changing).
//
//   history::GitInfo g = history::ReadGitInfo();   // {"3f2a...", "main"}, or empty outside git
#pragma once

#include <string>
#include <vector>

#include "trainprof/status.h"

namespace trainprof::history {

struct GitInfo {
  std::string commit;  // full hash of HEAD; empty outside a repository or without git
  std::string branch;  // empty on a detached HEAD
};

GitInfo ReadGitInfo(const std::string& dir = "");

// Hashes of HEAD and its ancestors, newest first, at most `limit`. Errors: `dir` is not in a
// git repository, or git is missing (the message says which).
StatusOr<std::vector<std::string>> AncestorCommits(const std::string& dir, size_t limit);

}  // namespace trainprof::history
