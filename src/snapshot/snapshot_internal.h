// What the snapshot analysis's files share (internal to src/snapshot/).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "memory/allocation_log.h"
#include "snapshot/snapshot_analysis.h"
#include "snapshot/snapshot_model.h"

namespace trainprof::snapshot {

// The label of the bytes live at a moment that no event of the history made.
inline constexpr const char* kBeforeHistoryLabel = "(allocated before the recorded history)";

// Stack labels, made once per stack.
class Labels {
 public:
  explicit Labels(const SnapshotModel& m) : m_(m), labels_(m.stacks()) {}
  const std::string& Of(uint32_t stack) {
    if (stack >= labels_.size()) stack = 0;
    if (labels_[stack].empty()) labels_[stack] = stack == 0 ? NoStack() : StackLabel(m_, stack);
    return labels_[stack];
  }

 private:
  // With Python stacks recorded elsewhere, a block without one was allocated where no Python
  // frame runs: autograd's backward thread, NCCL, cuBLAS workspaces.
  std::string NoStack() const {
    const bool python =
        std::any_of(m_.frames.begin(), m_.frames.end(), [](const Frame& f) { return f.python; });
    return python ? "(no Python stack: allocated by C++ code, e.g. autograd's backward)"
                  : "(no stack recorded)";
  }

  const SnapshotModel& m_;
  std::vector<std::string> labels_;
};

// One pass over a device's history: the curve (in d.curve), unmatched frees, retries, OOMs, and
// the allocation log: a block per allocation (seq: the event's index), one per block freed but
// never made in the history, and one for the rest resident before it (MatchEnd adds it).
struct Replay {
  void Run(const SnapshotModel& m, const std::vector<TraceEvent>& ev, DeviceMemory& d,
           Labels& labels);
  bool has_requested = false;         // frees are free_requested + free_completed
  std::vector<int64_t> alloc_prefix;  // bytes allocated by events [0, i)
  memory::AllocationLog log;
  std::vector<OomEvent> ooms;
  int64_t end_allocated = 0, end_reserved = 0;
  int64_t freed_before = 0;     // bytes the history freed that it never made
  int64_t resident_before = 0;  // requested bytes live at the end that it never made
};

void MatchEnd(const SnapshotModel& m, DeviceMemory& d, Replay& r);
void LiveAtPeak(const Replay& r, size_t peak, DeviceMemory& d, Labels& labels, size_t top);
std::vector<StackBytes> SortedBySize(const std::unordered_map<std::string, StackBytes>& by);

// Where a stack's blocks were made (memory::Origin bits), from its frames; `python_stacks`: the
// history records Python frames elsewhere.
uint8_t OriginOf(const SnapshotModel& m, uint32_t stack, bool python_stacks);

// An annotation's START / END pair.
struct Interval {
  int64_t start = 0, end = 0;
  uint32_t name = 0;
};
// START / END pairs of one device's annotations (and of those without a device), by start, those
// of one name that overlap merged; an annotation never ended runs to `last_us`.
std::vector<Interval> Intervals(const SnapshotModel& m, int64_t device, int64_t last_us);
// t, in the events' clock, lies in the window [from, to] counted from t0.
bool InWindow(int64_t t, const SnapshotOptions& o, int64_t t0);

void Phases(const SnapshotModel& m, const std::vector<TraceEvent>& ev, const Replay& r,
            const SnapshotOptions& o, int64_t t0, DeviceMemory& d);
void Steps(const SnapshotModel& m, const std::vector<TraceEvent>& ev, const Replay& r,
           const SnapshotOptions& o, int64_t t0, DeviceMemory& d, Labels& labels);
// Memory by role (d.roles): phases from the annotations and the log, roles inferred on it.
void Roles(const SnapshotModel& m, Replay& r, size_t peak, const SnapshotOptions& o, int64_t t0,
           DeviceMemory& d);
void Pools(const SnapshotModel& m, DeviceMemory& d);

}  // namespace trainprof::snapshot
