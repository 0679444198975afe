// Replaying a device's allocator history: the allocated / reserved curve, the peak and what was
// live at it, out-of-memory events and retries. Phases, steps and the end state are in
// snapshot_phases.cc.
#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "snapshot/snapshot_analysis.h"
#include "snapshot/snapshot_internal.h"

namespace trainprof::snapshot {
namespace {

bool DecrementsAllocated(Action a, bool has_requested) {
  return has_requested ? a == Action::kFreeRequested : a == Action::kFreeCompleted;
}

using Blocks = std::unordered_map<uint64_t, int64_t>;  // address -> size
using Segments = std::map<uint64_t, int64_t>;

// The largest gap between live blocks (made in the history, or before it) inside the segments
// known then (likewise).
int64_t LargestFree(const Segments& made, const Segments& before,
                    const std::unordered_map<uint64_t, LiveBlock>& live, const Blocks& earlier) {
  Segments segments = before;
  for (const auto& [addr, size] : made) segments[addr] = size;
  std::vector<std::pair<uint64_t, int64_t>> blocks(earlier.begin(), earlier.end());
  blocks.reserve(live.size() + earlier.size());
  for (const auto& [addr, b] : live) blocks.emplace_back(addr, b.size);
  std::sort(blocks.begin(), blocks.end());
  int64_t best = 0;
  auto it = blocks.begin();
  for (const auto& [base, size] : segments) {
    const uint64_t end = base + static_cast<uint64_t>(size);
    uint64_t cursor = base;
    it = std::lower_bound(it, blocks.end(), std::make_pair(base, int64_t{0}));
    for (; it != blocks.end() && it->first < end; ++it) {
      if (it->first > cursor)
        best = std::max<int64_t>(best, static_cast<int64_t>(it->first - cursor));
      cursor = std::max<uint64_t>(cursor, it->first + static_cast<uint64_t>(it->second));
    }
    if (end > cursor) best = std::max<int64_t>(best, static_cast<int64_t>(end - cursor));
  }
  return best;
}

bool IsSegmentMade(Action a) { return a == Action::kSegmentAlloc || a == Action::kSegmentMap; }
bool IsSegmentGone(Action a) { return a == Action::kSegmentFree || a == Action::kSegmentUnmap; }

// What existed before the history began (recording started mid-run, or the ring buffer dropped
// the oldest events): what the history frees without having made it, and the end state's
// segments and live blocks that no event of the history made.
void SeedBeforeHistory(const SnapshotModel& m, int64_t device, const std::vector<TraceEvent>& ev,
                       bool has_requested, Segments& segments, Blocks& blocks) {
  std::unordered_set<uint64_t> made_segments, made_blocks;
  for (const TraceEvent& e : ev) {
    if (IsSegmentMade(e.action)) {
      made_segments.insert(e.addr);
    } else if (IsSegmentGone(e.action) && made_segments.count(e.addr) == 0) {
      segments.emplace(e.addr, e.size);
    } else if (e.action == Action::kAlloc) {
      made_blocks.insert(e.addr);
    } else if (DecrementsAllocated(e.action, has_requested) && made_blocks.count(e.addr) == 0) {
      blocks.emplace(e.addr, e.size);
    }
  }
  for (const Segment& s : m.segments) {
    if (s.device != device || made_segments.count(s.address) != 0) continue;
    segments.emplace(s.address, s.total_size);
    for (const SegmentBlock& b : s.blocks)
      if (m.Str(b.state).rfind("active", 0) == 0 && made_blocks.count(b.address) == 0)
        blocks.emplace(b.address, b.size);
  }
}

}  // namespace

void Replay::Run(const SnapshotModel& m, const std::vector<TraceEvent>& ev, DeviceMemory& d,
                 Labels& labels) {
  has_requested = std::any_of(
      ev.begin(), ev.end(), [](const TraceEvent& e) { return e.action == Action::kFreeRequested; });
  alloc_prefix.assign(ev.size() + 1, 0);
  d.curve.resize(ev.size());
  Segments segments, segments_before;
  Blocks blocks_before;
  SeedBeforeHistory(m, d.device, ev, has_requested, segments_before, blocks_before);
  int64_t allocated = 0, reserved = 0;
  for (size_t i = 0; i < ev.size(); ++i) {
    const TraceEvent& e = ev[i];
    alloc_prefix[i + 1] = alloc_prefix[i] + (e.action == Action::kAlloc ? e.size : 0);
    if (e.action == Action::kAlloc) {
      allocated += e.size;
      live[e.addr] = {e.size, e.stack, e.time_us};
    } else if (DecrementsAllocated(e.action, has_requested)) {
      allocated -= e.size;
      if (live.erase(e.addr) == 0) {
        ++d.unmatched_frees;
        blocks_before.erase(e.addr);
      }
    } else if (IsSegmentMade(e.action)) {
      reserved += e.size;
      segments[e.addr] += e.size;
    } else if (IsSegmentGone(e.action)) {
      reserved -= e.size;
      if (segments.erase(e.addr) == 0) {
        ++d.unmatched_frees;
        segments_before.erase(e.addr);
      }
      if (i + 1 < ev.size() && ev[i + 1].action == Action::kSegmentAlloc) ++d.retries;
    } else if (e.action == Action::kOom) {
      OomEvent o{e.time_us,
                 e.size,
                 allocated,
                 reserved,
                 LargestFree(segments, segments_before, live, blocks_before),
                 static_cast<int64_t>(e.addr),
                 labels.Of(e.stack)};
      ooms.push_back(o);
    }
    d.curve[i] = {e.time_us, allocated, reserved};
  }
  end_allocated = allocated;
  end_reserved = reserved;
}

// What was live after event `peak`, by stack, and its largest blocks.
void LiveAtPeak(const std::vector<TraceEvent>& ev, size_t peak, bool has_requested, DeviceMemory& d,
                Labels& labels, size_t top) {
  std::unordered_map<uint64_t, LiveBlock> live;
  for (size_t i = 0; i <= peak && i < ev.size(); ++i) {
    const TraceEvent& e = ev[i];
    if (e.action == Action::kAlloc) {
      live[e.addr] = {e.size, e.stack, e.time_us};
    } else if (DecrementsAllocated(e.action, has_requested)) {
      live.erase(e.addr);
    }
  }
  std::unordered_map<std::string, StackBytes> by;
  std::vector<Allocation> all;
  int64_t known = 0;
  for (const auto& [addr, b] : live) {
    const std::string& label = labels.Of(b.stack);
    StackBytes& s = by[label];
    s.stack = label;
    s.bytes += b.size;
    ++s.blocks;
    known += b.size;
    all.push_back({label, b.size, addr, b.time_us});
  }
  if (d.peak_allocated > known) {
    StackBytes& s = by["(allocated before the recorded history)"];
    s.stack = "(allocated before the recorded history)";
    s.bytes = d.peak_allocated - known;
  }
  d.live_at_peak = SortedBySize(by);
  const size_t n = std::min(top, all.size());
  std::partial_sort(all.begin(), all.begin() + n, all.end(),
                    [](const Allocation& a, const Allocation& b) {
                      return a.size != b.size ? a.size > b.size : a.addr < b.addr;
                    });
  all.resize(n);
  d.top_allocations = std::move(all);
}

std::vector<StackBytes> SortedBySize(const std::unordered_map<std::string, StackBytes>& by) {
  std::vector<StackBytes> out;
  out.reserve(by.size());
  for (const auto& [label, s] : by) out.push_back(s);
  std::sort(out.begin(), out.end(), [](const StackBytes& a, const StackBytes& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.stack < b.stack;
  });
  return out;
}

// The segments' word on the end state, and the replayed curve shifted to agree with it.
void MatchEnd(const SnapshotModel& m, DeviceMemory& d, const Replay& r) {
  for (const Segment& s : m.segments) {
    if (s.device != d.device) continue;
    d.has_segments = true;
    d.end_reserved += s.total_size;
    for (const SegmentBlock& b : s.blocks)
      if (m.Str(b.state) == "active_allocated") d.end_allocated += b.size;
  }
  if (!d.has_segments) {
    d.end_allocated = r.end_allocated;
    d.end_reserved = r.end_reserved;
  }
  d.before_history_allocated = d.end_allocated - r.end_allocated;
  d.before_history_reserved = d.end_reserved - r.end_reserved;
  d.starts_late =
      d.unmatched_frees > 0 || d.before_history_allocated != 0 || d.before_history_reserved != 0;
  for (CurvePoint& p : d.curve) {
    p.allocated += d.before_history_allocated;
    p.reserved += d.before_history_reserved;
  }
}

}  // namespace trainprof::snapshot
