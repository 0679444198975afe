// SnapshotReport (driver.h): a memory snapshot's report, for `trainprof analyze x.pickle` and
// trainprof.analyze("x.pickle").
#include "analysis/run/snapshot_run.h"

#include <fmt/format.h>

#include <cmath>

#include "snapshot/snapshot_model.h"
#include "snapshot/snapshot_section.h"
#include "snapshot/torch_timeline.h"
#include "trace/input_kind.h"

namespace trainprof::analysis {

snapshot::SnapshotOptions SnapshotOptionsOf(const AnalyzeRequest& r) {
  snapshot::SnapshotOptions o;
  if (!std::isnan(r.from_s)) o.from_us = static_cast<int64_t>(std::llround(r.from_s * 1e6));
  if (!std::isnan(r.to_s)) o.to_us = static_cast<int64_t>(std::llround(r.to_s * 1e6));
  o.top = static_cast<size_t>(r.top_kernels);
  return o;
}

namespace {

StatusOr<report::Report> TimelineReport(const std::string& path) {
  TRAINPROF_ASSIGN_OR_RETURN(snapshot::DeviceMemory d, snapshot::ReadTorchTimeline(path));
  report::Report rep;
  rep.kind = "snapshot";
  rep.title = fmt::format("trainprof analyze: {}", path);
  rep.AddMeta("input", path);
  snapshot::AddTorchTimelineSections(path, d, rep);
  return rep;
}

}  // namespace

StatusOr<report::Report> SnapshotReport(const std::string& path, const AnalyzeRequest& r) {
  const snapshot::SnapshotOptions o = SnapshotOptionsOf(r);
  if (trace::SniffInput(path) == trace::InputKind::kMemoryTimeline) return TimelineReport(path);
  TRAINPROF_ASSIGN_OR_RETURN(snapshot::SnapshotModel m, snapshot::ReadSnapshot(path));
  report::Report rep;
  rep.kind = "snapshot";
  rep.title = fmt::format("trainprof analyze: {}", path);
  rep.AddMeta("input", path);
  snapshot::AddSnapshotSections(m, snapshot::AnalyzeSnapshot(m, o), o, rep);
  return rep;
}

StatusOr<report::Report> SnapshotDiffReport(const std::string& a, const std::string& b,
                                            const AnalyzeRequest& r) {
  for (const std::string& p : {a, b})
    if (trace::SniffInput(p) != trace::InputKind::kMemorySnapshot)
      return InvalidArgument(fmt::format(
          "{}: not a memory snapshot pickle, and diff compares a snapshot with a snapshot", p));
  const snapshot::SnapshotOptions o = SnapshotOptionsOf(r);
  TRAINPROF_ASSIGN_OR_RETURN(snapshot::SnapshotModel ma, snapshot::ReadSnapshot(a));
  TRAINPROF_ASSIGN_OR_RETURN(snapshot::SnapshotModel mb, snapshot::ReadSnapshot(b));
  report::Report rep;
  rep.kind = "snapshot_diff";
  rep.title = fmt::format("trainprof diff: {} vs {}", a, b);
  snapshot::AddSnapshotDiffSections(a, snapshot::AnalyzeSnapshot(ma, o), b,
                                    snapshot::AnalyzeSnapshot(mb, o),
                                    static_cast<size_t>(r.top_kernels), rep);
  return rep;
}

}  // namespace trainprof::analysis
