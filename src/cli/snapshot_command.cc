// `trainprof analyze snapshot.pickle` and `trainprof diff a.pickle b.pickle`.
#include "cli/snapshot_command.h"

#include <fmt/format.h>

#include <algorithm>

#include "analysis/run/snapshot_run.h"
#include "snapshot/snapshot_section.h"
#include "trace/input_kind.h"
#include "trace/trace_files.h"

namespace trainprof::cli {
namespace {

bool HasOtherInputs(const std::string& dir) {
  auto listing = trace::ListTraceRuns(dir);
  return listing.ok() && !listing->runs.empty();
}

int AnalyzeOne(const std::string& path, const AnalyzeFlags& f, const Options::Output& out) {
  StatusOr<report::Report> r = analysis::SnapshotReport(path, f);
  if (!r.ok()) {
    fmt::print(stderr, "trainprof: {}\n", r.status().message());
    return kExitBadInput;
  }
  return EmitReport(*r, f, out);
}

}  // namespace

bool AnalyzeSnapshotInputs(const AnalyzeFlags& f, int* code) {
  *code = kExitOk;
  if (trace::IsMemorySnapshot(f.path)) {
    *code = AnalyzeOne(f.path, f, f.out);
    return true;
  }
  const std::vector<std::string> files = trace::ListMemorySnapshots(f.path);
  if (files.empty()) return false;
  for (size_t i = 0; i < files.size(); ++i) {
    Options::Output out = f.out;
    if (files.size() > 1 && !out.run_dir.empty())
      out.run_dir = fmt::format("{}/snapshot{}", f.out.run_dir, i + 1);
    *code = std::max(*code, AnalyzeOne(files[i], f, out));
  }
  return !HasOtherInputs(f.path);
}

bool DiffSnapshotInputs(const AnalyzeFlags& f, const std::string& b_path, int* code) {
  if (!trace::IsMemorySnapshot(f.path) && !trace::IsMemorySnapshot(b_path)) return false;
  StatusOr<report::Report> r = analysis::SnapshotDiffReport(f.path, b_path, f);
  if (!r.ok()) {
    fmt::print(stderr, "trainprof: {}\n", r.status().message());
    *code = kExitBadInput;
    return true;
  }
  *code = EmitReport(*r, f, f.out);
  return true;
}

}  // namespace trainprof::cli
