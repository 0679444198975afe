// Where a snapshot's GPU memory went, per device: allocated and reserved over time replayed from
// the allocator's history, the peak and what was live at it by call stack, memory per annotation
// and per step, what each step left behind (leaks, creep), out-of-memory events with the largest
// free block, and the allocator's state at the end.
//
//   SnapshotModel m = *ReadSnapshot("memory_snapshot.pickle");
//   std::vector<DeviceMemory> d = AnalyzeSnapshot(m, {.from_us = t0, .to_us = t1});
//   d[0].peak_allocated, d[0].live_at_peak[0].bytes, ...
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "memory/roles.h"
#include "snapshot/snapshot_model.h"

namespace trainprof::snapshot {

struct SnapshotOptions {
  int64_t from_us = std::numeric_limits<int64_t>::min();  // --from / --to, the events' clock
  int64_t to_us = std::numeric_limits<int64_t>::max();
  size_t top = 10;  // rows in the stack and allocation tables
};

struct CurvePoint {
  int64_t time_us = 0;
  int64_t allocated = 0;
  int64_t reserved = 0;
};

// Bytes by call stack, grouped by the stack's Python frames (C++ frames folded).
struct StackBytes {
  std::string stack;  // "fn (file.py:12) <- caller (file.py:40) [+12 C++ frames]"
  int64_t bytes = 0;
  int64_t blocks = 0;
  int64_t steps = 0;  // growth: in how many steps this stack left memory behind
};

struct Allocation {
  std::string stack;
  int64_t size = 0;
  uint64_t addr = 0;
  int64_t time_us = 0;
};

struct PhaseMemory {  // one annotation name (record_function / external_annotations)
  std::string name;
  int64_t instances = 0;
  int64_t allocated_bytes = 0;  // bytes allocated while it ran
  int64_t net_bytes = 0;        // allocated at its ends minus at its starts, summed
  int64_t peak = 0;             // the highest allocated while it ran
};

struct StepMemory {
  std::string name;
  int64_t start_us = 0, end_us = 0;
  int64_t allocated_start = 0, allocated_end = 0, peak = 0;
  int64_t left_bytes = -1;  // allocated in this step, still live when the next one ended
};

struct OomEvent {
  int64_t time_us = 0;
  int64_t requested = 0;
  int64_t allocated = 0;
  int64_t reserved = 0;
  int64_t largest_free = 0;  // the largest free block in the reserved segments
  int64_t device_free = 0;   // what the driver said was free
  std::string stack;
};

struct PoolState {   // the allocator at the end, from the snapshot's segments
  std::string pool;  // "large", "small", "private large" (a CUDA graph's pool), ...
  int64_t segments = 0, expandable = 0;
  int64_t reserved = 0, allocated = 0;
  int64_t inactive_split_blocks = 0, inactive_split_bytes = 0, largest_inactive = 0;
};

// Memory by role (memory/roles.h), inferred from the history's lifetimes, phases and frames.
struct RoleMemory {
  bool inferred = false;                           // the device has a history to infer from
  memory::RoleBytes at_peak{};                     // bytes by role at the peak
  std::vector<std::pair<uint8_t, int64_t>> rules;  // bytes at the peak each rule decided
  std::vector<std::pair<memory::Role, StackBytes>> stacks;  // the largest stacks of each role
  std::vector<memory::PhaseSpan> phases;    // the step's phases, times from the first event
  std::vector<memory::RolePoint> timeline;  // bytes by role over the window
  // Gradients still live when a later forward began (zero_grad without set_to_none, or late).
  int64_t gradients_into_forward = 0;

  int64_t At(memory::Role r) const { return at_peak[static_cast<size_t>(r)]; }
  int64_t ByRule(uint8_t rule) const {
    for (const auto& [r, bytes] : rules)
      if (r == rule) return bytes;
    return 0;
  }
  // A role's largest stack at the peak; "" when the source has no stacks.
  std::string LargestStack(memory::Role role) const {
    for (const auto& [r, s] : stacks)
      if (r == role) return s.stack;
    return "";
  }
};

struct DeviceMemory {
  int64_t device = 0;
  int64_t events = 0;
  int64_t first_us = 0, last_us = 0;  // the window's events
  std::vector<CurvePoint> curve;      // one point per event in the window
  // The history lost its beginning (PyTorch's ring buffer of max_entries): frees of blocks never
  // allocated in it, or an end that does not match the segments.
  bool starts_late = false;
  int64_t before_history_allocated = 0;  // added to the replayed curve so its end is right
  int64_t before_history_reserved = 0;
  int64_t end_allocated = 0, end_reserved = 0;  // the segments' word, when there are segments
  bool has_segments = false;
  int64_t unmatched_frees = 0;
  int64_t peak_allocated = 0, peak_time_us = 0, peak_reserved = 0;
  std::vector<StackBytes> live_at_peak;  // largest first
  std::vector<Allocation> top_allocations;
  std::vector<PhaseMemory> phases;
  std::vector<StepMemory> steps;
  std::vector<StackBytes> growth;  // what steps left behind, by stack
  std::vector<OomEvent> ooms;
  int64_t retries = 0;  // cached segments freed and cudaMalloc tried again
  std::vector<PoolState> pools;
  RoleMemory roles;
};

std::vector<DeviceMemory> AnalyzeSnapshot(const SnapshotModel& m, const SnapshotOptions& o);

// "fn (file.py:12) <- caller (file.py:40) [+12 C++ frames]": Python frames first, innermost
// first, at most `max_frames` of them; C++ frames only when there is no Python frame.
std::string StackLabel(const SnapshotModel& m, uint32_t stack, size_t max_frames = 4);

// A step annotation: "ProfilerStep#12", "step 3", "train_step_7", ...
bool IsStepName(std::string_view name);

}  // namespace trainprof::snapshot
