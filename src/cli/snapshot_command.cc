// `trainprof analyze snapshot.pickle` (the diff of two is the driver's DiffRun).
#include "cli/snapshot_command.h"

#include <fmt/format.h>

#include <algorithm>

#include "analysis/run/snapshot_run.h"
#include "snapshot/snapshot_section.h"

namespace trainprof::cli {
namespace {

int AnalyzeOne(const std::string& path, const AnalyzeFlags& f, const Options::Output& out) {
  StatusOr<report::Report> r = analysis::SnapshotReport(path, f);
  if (!r.ok()) {
    fmt::print(stderr, "trainprof: {}\n", r.status().message());
    return kExitBadInput;
  }
  return EmitReport(*r, f, out);
}

}  // namespace

int AnalyzeSnapshots(const std::vector<std::string>& files, const AnalyzeFlags& f) {
  int code = kExitOk;
  for (size_t i = 0; i < files.size(); ++i) {
    Options::Output out = f.out;
    if (files.size() > 1 && !out.run_dir.empty())
      out.run_dir = fmt::format("{}/snapshot{}", f.out.run_dir, i + 1);
    code = std::max(code, AnalyzeOne(files[i], f, out));
  }
  return code;
}

}  // namespace trainprof::cli
