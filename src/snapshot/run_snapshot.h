// The memory snapshots a run wrote, analysed into its report as `trainprof analyze` would: the
// history dumped after the recorded steps and, when the allocator ran out of memory, the snapshot
// written at that moment, which is the one analysed then (the other is named with the command).
//
//   RunSnapshots s;
//   s.history_file = run_dir + "/memory_snapshot.pickle";
//   s.oom = OomNotice{0, 2 << 30, 70 << 30, 1 << 20, run_dir + "/memory_snapshot_oom.pickle"};
//   AddRunSnapshots(s, report);
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "report/report.h"

namespace trainprof::snapshot {

// What PyTorch's out-of-memory observer was told, and where the snapshot then went.
struct OomNotice {
  int64_t device = 0;
  int64_t requested = 0;
  int64_t device_allocated = 0;  // bytes the caching allocator held on the device
  int64_t device_free = 0;       // bytes the driver said were free
  std::string file;
};

struct RunSnapshots {
  std::string history_file;  // "" when none was dumped
  std::optional<OomNotice> oom;
};

// The snapshot sections, an error finding for the OOM, and a snapshot_unreadable diagnostic for
// a file that does not read back.
void AddRunSnapshots(const RunSnapshots& s, report::Report& r);

}  // namespace trainprof::snapshot
