// What the snapshot analysis's files share (internal to src/snapshot/).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "snapshot/snapshot_analysis.h"
#include "snapshot/snapshot_model.h"

namespace trainprof::snapshot {

struct LiveBlock {
  int64_t size = 0;
  uint32_t stack = 0;
  int64_t time_us = 0;
};

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

// One pass over a device's history: the curve (in d.curve), unmatched frees, retries, OOMs.
struct Replay {
  void Run(const SnapshotModel& m, const std::vector<TraceEvent>& ev, DeviceMemory& d,
           Labels& labels);
  bool has_requested = false;         // frees are free_requested + free_completed
  std::vector<int64_t> alloc_prefix;  // bytes allocated by events [0, i)
  std::unordered_map<uint64_t, LiveBlock> live;
  std::vector<OomEvent> ooms;
  int64_t end_allocated = 0, end_reserved = 0;
};

void MatchEnd(const SnapshotModel& m, DeviceMemory& d, const Replay& r);
void LiveAtPeak(const std::vector<TraceEvent>& ev, size_t peak, bool has_requested, DeviceMemory& d,
                Labels& labels, size_t top);
std::vector<StackBytes> SortedBySize(const std::unordered_map<std::string, StackBytes>& by);

// Events [lo, hi) of the window [from, to].
struct Window {
  size_t lo = 0, hi = 0;
};

void Phases(const SnapshotModel& m, const std::vector<TraceEvent>& ev, const Replay& r,
            const SnapshotOptions& o, int64_t t0, DeviceMemory& d);
void Steps(const SnapshotModel& m, const std::vector<TraceEvent>& ev, const Replay& r,
           const SnapshotOptions& o, int64_t t0, DeviceMemory& d, Labels& labels);
void Pools(const SnapshotModel& m, DeviceMemory& d);

}  // namespace trainprof::snapshot
