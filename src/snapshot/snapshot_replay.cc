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
int64_t LargestFree(const Segments& made, const Segments& before, const Blocks& live,
                    const Blocks& earlier) {
  Segments segments = before;
  for (const auto& [addr, size] : made) segments[addr] = size;
  std::vector<std::pair<uint64_t, int64_t>> blocks(earlier.begin(), earlier.end());
  blocks.reserve(live.size() + earlier.size());
  for (const auto& [addr, size] : live) blocks.emplace_back(addr, size);
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
// `resident`: the requested bytes of the end state's allocated blocks that no event made.
void SeedBeforeHistory(const SnapshotModel& m, int64_t device, const std::vector<TraceEvent>& ev,
                       bool has_requested, Segments& segments, Blocks& blocks, int64_t& resident) {
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
    for (const SegmentBlock& b : s.blocks) {
      if (m.Str(b.state).rfind("active", 0) != 0 || made_blocks.count(b.address) != 0) continue;
      blocks.emplace(b.address, b.size);
      if (m.Str(b.state) == "active_allocated")
        resident += b.requested_size > 0 ? b.requested_size : b.size;
    }
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
  Blocks blocks_before, live;
  std::unordered_map<uint64_t, size_t> open;         // address -> its block in the log
  std::vector<int16_t> origins(m.stacks() + 1, -1);  // by stack, made once
  const bool python_stacks =
      std::any_of(m.frames.begin(), m.frames.end(), [](const Frame& f) { return f.python; });
  auto origin = [&](uint32_t stack) {
    int16_t& o = origins[std::min<size_t>(stack, m.stacks())];
    if (o < 0) o = OriginOf(m, stack, python_stacks);
    return static_cast<uint8_t>(o);
  };
  SeedBeforeHistory(m, d.device, ev, has_requested, segments_before, blocks_before,
                    resident_before);
  log.blocks.reserve(static_cast<size_t>(std::count_if(
      ev.begin(), ev.end(), [](const TraceEvent& e) { return e.action == Action::kAlloc; })));
  int64_t allocated = 0, reserved = 0;
  for (size_t i = 0; i < ev.size(); ++i) {
    const TraceEvent& e = ev[i];
    const auto seq = static_cast<int64_t>(i);
    alloc_prefix[i + 1] = alloc_prefix[i] + (e.action == Action::kAlloc ? e.size : 0);
    if (e.action == Action::kAlloc) {
      allocated += e.size;
      live[e.addr] = e.size;
      open[e.addr] = log.blocks.size();
      log.blocks.push_back({.device = d.device,
                            .bytes = e.size,
                            .alloc_seq = seq,
                            .alloc_time = e.time_us,
                            .addr = e.addr,
                            .stack = e.stack,
                            .origin = origin(e.stack)});
    } else if (DecrementsAllocated(e.action, has_requested)) {
      allocated -= e.size;
      live.erase(e.addr);
      if (auto it = open.find(e.addr); it != open.end()) {
        log.blocks[it->second].free_seq = seq;
        log.blocks[it->second].free_time = e.time_us;
        open.erase(it);
      } else {
        ++d.unmatched_frees;
        blocks_before.erase(e.addr);
        freed_before += e.size;
        log.blocks.push_back({.device = d.device,
                              .bytes = e.size,
                              .free_seq = seq,
                              .free_time = e.time_us,
                              .addr = e.addr});
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

// What the history's blocks held after event `peak`, by stack label, and its largest blocks;
// the rest of the peak was allocated before the history.
void LiveAtPeak(const Replay& r, size_t peak, DeviceMemory& d, Labels& labels, size_t top) {
  const auto seq = static_cast<int64_t>(peak);
  auto made = [](const memory::Block& b) { return b.alloc_seq != memory::kBefore; };
  std::unordered_map<std::string, StackBytes> by;
  int64_t known = 0;
  for (const memory::KeyBytes& k : memory::LiveAt(
           r.log, d.device, seq, [](const memory::Block& b) { return b.stack; }, made)) {
    const std::string& label = labels.Of(k.key);
    StackBytes& s = by[label];
    s.stack = label;
    s.bytes += k.bytes;
    s.blocks += k.blocks;
    known += k.bytes;
  }
  if (d.peak_allocated > known) {
    StackBytes& s = by[kBeforeHistoryLabel];
    s.stack = kBeforeHistoryLabel;
    s.bytes = d.peak_allocated - known;
  }
  d.live_at_peak = SortedBySize(by);
  d.top_allocations.clear();
  for (const memory::Block* b : memory::LargestLive(r.log, d.device, seq, top, made))
    d.top_allocations.push_back({labels.Of(b->stack), b->bytes, b->addr, b->alloc_time});
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
void MatchEnd(const SnapshotModel& m, DeviceMemory& d, Replay& r) {
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
  // What was resident before the history: its blocks' requested bytes, and the rest of the
  // curve's offset, the allocator's rounding of the blocks live at the end.
  const int64_t rest = d.before_history_allocated - r.freed_before;
  const int64_t resident = std::clamp<int64_t>(r.resident_before, 0, std::max<int64_t>(rest, 0));
  if (resident > 0) r.log.blocks.push_back({.device = d.device, .bytes = resident});
  if (rest > resident)
    r.log.blocks.push_back({.device = d.device,
                            .bytes = rest - resident,
                            .role = memory::Role::kUnknown,
                            .rule = memory::kAllocatorRounding});
  for (CurvePoint& p : d.curve) {
    p.allocated += d.before_history_allocated;
    p.reserved += d.before_history_reserved;
  }
}

}  // namespace trainprof::snapshot
