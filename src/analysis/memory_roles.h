// Memory by role for a trace's [memory] events (memory/roles.h on the Memory view's allocation
// log): the optimizer's phases from its Optimizer.step# / Optimizer.zero_grad# ranges, the
// backward from the blocks made inside autograd's evaluate_function ops, the memory live before
// the trace as one block, and bytes by role and by rule at each device's peak.
//
//   RolesAtPeak r = MemoryRoles(model, device, peak_event, log);
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "memory/allocation_log.h"
#include "memory/roles.h"
#include "trace/trace_model.h"

namespace trainprof::analysis {

struct RolesAtPeak {
  std::vector<int64_t> role_bytes;  // by memory::Role
  std::vector<int64_t> rule_bytes;  // by memory::Rule
  // Bytes by role over the trace at about kRoleTimelinePoints events and at the peak.
  std::vector<memory::RolePoint> timeline;
};

inline constexpr size_t kRoleTimelinePoints = 200;

// Adds the block made before the trace to `log`, infers the device's roles on it, and gives
// them at the device's peak (`peak_event`: its index in the model's memory events) and over time.
RolesAtPeak MemoryRoles(const trace::TraceModel& m, int64_t device, size_t peak_event,
                        memory::AllocationLog& log);

}  // namespace trainprof::analysis
