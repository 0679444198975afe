// The TensorBoard plugin's Memory view, from the `[memory]` instant events of a trace recorded
// with profile_memory=True (TraceModel::memory_events):
//   * per device, the allocated and reserved curve ("Total Allocated" / "Total Reserved" after
//     each event; the running sum of "Bytes" where a trace has no totals), and its peak;
//   * each allocation or free belongs to the innermost cpu_op on the same thread whose
//     [start, end) holds its ts, as the plugin attributes memory records; none: unattributed;
//   * allocations matched to their frees by device and "Addr": size, alloc and release time;
//   * per operator and device, the plugin's six figures: self / total allocation count, bytes
//     allocated, and increase (allocated minus freed); "total" adds the ops nested inside;
//   * what was live at the peak, by the operator that allocated it, and by role (memory_roles.h).
// Its allocations are the one allocation log (memory/allocation_log.h).
//
//   MemoryResult mem = MemoryView(model);
//   for (const DeviceMemory& d : mem.devices) peak = std::max(peak, d.peak_allocated);
//   d.series->curve  // the curve behind it
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "base/box.h"
#include "memory/roles.h"
#include "trace/trace_model.h"

namespace trainprof::analysis {

struct MemoryPoint {
  int64_t ts_ns = 0;
  int64_t allocated = 0;
  int64_t reserved = trace::kNone;  // kNone: the trace has no Total Reserved
};

// Bytes live at the device's peak that one operator allocated.
struct LiveBytes {
  uint32_t op = trace::kNoName;  // name id; kNoName: no enclosing cpu_op, or before the trace
  int64_t bytes = 0;
};

// A device's memory over time and the detail of its peak: read only by the device's own rows of
// the report, so while many ranks wait for it this waits with the rank's detail in a scratch
// file (ranks/detail_store.h).
struct DeviceSeries {
  std::vector<MemoryPoint> curve;       // one point per event, in time order
  std::vector<LiveBytes> live_at_peak;  // by bytes, largest first
  // Memory by role at the peak (memory_roles.h): bytes by memory::Role and by memory::Rule.
  std::vector<int64_t> role_bytes, rule_bytes;
  std::vector<memory::RolePoint> role_timeline;  // bytes by role over time, the trace's clock
};

struct DeviceMemory {
  int64_t device = -1;         // "Device Id"; -1: the CPU
  int64_t peak_allocated = 0;  // the first time the curve is highest
  int64_t peak_ts_ns = 0;
  int64_t peak_reserved = trace::kNone;
  // Bytes live at the peak whose allocation the trace does not show (made before it began, or
  // with no "Addr"): the peak minus what the matched allocations explain.
  int64_t live_unknown = 0;
  // The lengths of the series' curve (the device's memory events) and role timeline, known
  // while the series waits in a scratch file (CurvePoints, HasRoleTimeline).
  uint32_t curve_points = 0, role_points = 0;
  base::Box<DeviceSeries> series;
};

struct Allocation {
  int64_t device = -1;
  uint32_t op = trace::kNoName;  // the allocating operator
  int64_t bytes = 0;
  int64_t alloc_ns = 0;
  int64_t free_ns = trace::kNone;  // kNone: still live at the trace's end
};

struct OperatorMemory {
  uint32_t op = trace::kNoName;
  int64_t device = -1;
  int64_t calls = 0;  // calls of this cpu_op on threads with memory events
  int64_t self_count = 0, self_bytes = 0, self_increase = 0;
  int64_t total_count = 0, total_bytes = 0, total_increase = 0;
};

// The attribution the Memory view makes: for each memory event of `m` (its index) inside a
// cpu_op, the cpu_ops open around it on its thread, outermost first, in the events' time order.
void ForEachMemoryEventStack(const trace::TraceModel& m,
                             const std::function<void(size_t, const std::vector<uint32_t>&)>& f);

// The view's lists that only the rank's own rows of the report read: while many ranks wait for
// it they wait with the rank's detail in a scratch file, a box of the result (a pointer's
// room, not three lists' headers).
struct MemoryLists {
  std::vector<Allocation> allocations;    // by alloc time
  std::vector<OperatorMemory> operators;  // by device, then total increase, largest first
  // For the report once the model is gone: the names of the operators above (op id -> name,
  // by id).
  std::vector<std::pair<uint32_t, std::string>> op_names;
};

struct MemoryResult {
  std::vector<DeviceMemory> devices;  // by device id
  base::Box<MemoryLists> lists;
  int64_t events = 0;               // [memory] events read
  int64_t unattributed = 0;         // events inside no cpu_op
  int64_t frees_without_alloc = 0;  // frees of memory allocated before the trace
  int64_t t0_ns = 0;                // the trace's first timestamp, from which the report counts
  // The operator's name; "(no operator)" for kNoName.
  std::string NameOf(uint32_t op) const;
};

// Empty when the trace has no [memory] events. Never fails.
MemoryResult MemoryView(const trace::TraceModel& m);

}  // namespace trainprof::analysis
