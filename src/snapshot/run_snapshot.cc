#include "snapshot/run_snapshot.h"

#include <fmt/format.h>

#include "snapshot/snapshot_analysis.h"
#include "snapshot/snapshot_model.h"
#include "snapshot/snapshot_section.h"

namespace trainprof::snapshot {

namespace {

using detail::Bytes;
using detail::Dev;

std::string OomText(const OomNotice& o) {
  return fmt::format(
      "{} ran out of memory asking for {}: the caching allocator held {} and the driver had {} "
      "free; {} holds the allocator at that moment (trainprof analyze {})",
      Dev(o.device), Bytes(o.requested), Bytes(o.device_allocated), Bytes(o.device_free), o.file,
      o.file);
}

// Reads and analyses `file` into `r`: its overview section, or nullptr (and a diagnostic) when
// it does not read back.
report::Section* AddFile(const std::string& file, report::Report& r) {
  StatusOr<SnapshotModel> m = ReadSnapshot(file);
  if (!m.ok()) {
    r.diagnostics.push_back(
        {report::DiagnosticId::kSnapshotUnreadable, 1,
         fmt::format("the run's memory snapshot does not read back: {}", m.status().message())});
    return nullptr;
  }
  const SnapshotOptions o;
  const size_t first = r.sections.size();  // AddSnapshotSections adds the overview first
  AddSnapshotSections(*m, AnalyzeSnapshot(*m, o), o, r);
  return &r.sections[first];
}

}  // namespace

void AddRunSnapshots(const RunSnapshots& s, report::Report& r) {
  const std::string& analysed = s.oom ? s.oom->file : s.history_file;
  report::Section* overview = analysed.empty() ? nullptr : AddFile(analysed, r);
  if (overview == nullptr) return;
  if (s.oom) {
    overview->findings.insert(overview->findings.begin(),
                              {report::Severity::kError, OomText(*s.oom)});
  }
  if (s.oom && !s.history_file.empty()) {
    overview->notes.push_back(fmt::format(
        "This is the snapshot taken at the out-of-memory error; the recorded steps' history is "
        "{} (trainprof analyze {}).",
        s.history_file, s.history_file));
  }
}

}  // namespace trainprof::snapshot
