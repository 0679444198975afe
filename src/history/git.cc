#include "history/git.h"

#include <fmt/format.h>

#include <sstream>

#include "base/subprocess.h"

namespace trainprof::history {
namespace {

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

GitInfo ReadGitInfo(const std::string& dir) {
  GitInfo g;
  auto commit = base::RunAndCapture({"git", "rev-parse", "--verify", "-q", "HEAD"}, dir);
  if (!commit.ok()) return g;
  g.commit = Trim(*commit);
  auto branch = base::RunAndCapture({"git", "symbolic-ref", "--short", "-q", "HEAD"}, dir);
  if (branch.ok()) g.branch = Trim(*branch);
  return g;
}

StatusOr<std::vector<std::string>> AncestorCommits(const std::string& dir, size_t limit) {
  auto out =
      base::RunAndCapture({"git", "rev-list", fmt::format("--max-count={}", limit), "HEAD"}, dir);
  if (!out.ok()) {
    return FailedPrecondition(fmt::format(
        "--baseline ancestor needs a git repository with commits ({})", out.status().message()));
  }
  std::vector<std::string> commits;
  std::istringstream in(*out);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) commits.push_back(line);
  return commits;
}

}  // namespace trainprof::history
