// PyTorch's own memory timeline (torch.profiler's export_memory_timeline_raw: a JSON list of
// [time_ns, action, bytes, category] for one device, gzip'd or not) read into the allocation log
// with PyTorch's categories as the roles, so a user with only that file gets the same tables as
// from a snapshot: roles at the peak, the timeline by role, and the advice.
//
//   StatusOr<DeviceMemory> d = ReadTorchTimeline("memory.raw.gz");
//   AddTorchTimelineSections("memory.raw.gz", *d, report);
#pragma once

#include <string>
#include <string_view>

#include "report/report.h"
#include "snapshot/snapshot_analysis.h"
#include "trainprof/status.h"

namespace trainprof::snapshot {

// Errors: one line naming the file and byte (not a list of 4-number rows, a category outside
// PyTorch's 0-7).
StatusOr<DeviceMemory> ReadTorchTimeline(const std::string& path);
StatusOr<DeviceMemory> ReadTorchTimelineBytes(std::string_view bytes, const std::string& name);

void AddTorchTimelineSections(const std::string& path, const DeviceMemory& d, report::Report& r);

}  // namespace trainprof::snapshot
