#include "analysis/memory_roles.h"

#include <string_view>

#include "memory/roles.h"

namespace trainprof::analysis {
namespace {

// The optimizer's annotated ranges in the trace, on any thread.
std::vector<memory::PhaseSpan> OptimizerRanges(const trace::TraceModel& m) {
  std::vector<memory::PhaseSpan> out;
  for (size_t i = 0; i < m.size(); ++i) {
    if (m.kind[i] != trace::EventKind::kCpuOp) continue;
    if (const auto phase = memory::OptimizerPhaseOf(m.names[m.name[i]]))
      out.push_back({*phase, m.ts_ns[i], m.end_ns(i)});
  }
  return out;
}

// What was live on the device before its first event (its total less the event's own bytes),
// less what the trace frees of it, as one block made before the trace.
void AddBeforeTrace(const trace::TraceModel& m, memory::AllocationLog& log, int64_t device) {
  for (const trace::MemoryEvent& e : m.memory_events) {
    if (e.device_id != device) continue;
    if (e.total_allocated == trace::kNone) return;
    int64_t before = e.total_allocated - e.bytes;
    for (const memory::Block& b : log.blocks)
      if (b.device == device && b.alloc_seq == memory::kBefore) before -= b.bytes;
    if (before > 0) log.blocks.push_back({.device = device, .bytes = before});
    return;
  }
}

}  // namespace

RolesAtPeak MemoryRoles(const trace::TraceModel& m, int64_t device, size_t peak_event,
                        memory::AllocationLog& log) {
  AddBeforeTrace(m, log, device);
  const auto phases = memory::StepPhases(log, device, OptimizerRanges(m));
  memory::InferRoles(log, device, phases);
  const auto seq = static_cast<int64_t>(peak_event);
  const memory::RoleBytes roles = memory::RolesAt(log, device, seq);
  RolesAtPeak out{{roles.begin(), roles.end()}, std::vector<int64_t>(memory::kRules, 0)};
  for (const auto& [rule, bytes] : memory::RulesAt(log, device, seq)) out.rule_bytes[rule] = bytes;
  out.timeline = memory::RoleTimeline(log, device, seq, kRoleTimelinePoints);
  return out;
}

}  // namespace trainprof::analysis
