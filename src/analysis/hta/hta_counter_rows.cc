#include "analysis/hta/hta_counter_rows.h"

#include <algorithm>
#include <cmath>

#include "analysis/kernel_class.h"
#include "analysis/op_tree.h"

namespace trainprof::analysis {

using trace::EventKind;

std::vector<MemoryBwRow> HtaMemoryBwRows(const trace::TraceModel& m, const HtaOptions& o) {
  const HtaEvents ev = SelectHtaEvents(m, StepsResult{}, o);
  std::vector<MemoryBwRow> out;
  for (const HtaEv& e : ev.ev) {
    if (e.type != static_cast<int8_t>(KernelType::kMemory)) continue;
    const double bw = m.MemoryBwOf(e.event);
    const int64_t end = e.end > e.ts ? e.end : e.ts + 1000;
    out.push_back({e.ts, end, m.pid_of(e.event), m.name_of(e.event), std::isnan(bw) ? 0 : bw});
  }
  return out;
}

namespace {

// The cpu_ops around runtime call `call`, outermost first: the operator tree's ranges from the
// innermost around it up (user annotations and Python frames left out, as HTA's stack).
std::vector<std::string> CpuOpStack(const trace::TraceModel& m, const OpTree& tree, uint32_t call) {
  std::vector<std::string> out;
  for (int32_t k = tree.owner[call]; k >= 0; k = tree.nodes[static_cast<size_t>(k)].parent) {
    const uint32_t e = tree.nodes[static_cast<size_t>(k)].event;
    if (m.kind[e] == EventKind::kCpuOp) out.push_back(m.name_of(e));
  }
  std::ranges::reverse(out);
  return out;
}

}  // namespace

CounterRanges HtaCounterRanges(const trace::TraceModel& m, const HtaOptions& o) {
  CounterRanges r;
  r.any = !m.range_counters.empty();
  if (!r.any) return r;
  const HtaTimes t(m, o.hta_compat);
  std::vector<uint32_t> ranges, calls;
  for (const auto& c : m.range_counters)
    if (ranges.empty() || ranges.back() != c.event) ranges.push_back(c.event);
  for (size_t i = 0; i < m.size(); ++i)
    if (m.kind[i] == EventKind::kRuntime && m.name_of(i).starts_with("cudaLaunchKernel"))
      calls.push_back(static_cast<uint32_t>(i));
  auto by_start = [&](uint32_t a, uint32_t b) { return m.ts_ns[a] < m.ts_ns[b]; };
  std::ranges::stable_sort(ranges, by_start);
  std::ranges::stable_sort(calls, by_start);
  r.ranges = static_cast<int64_t>(ranges.size());
  r.launches = static_cast<int64_t>(calls.size());
  r.matched = ranges.size() == calls.size();
  if (!r.matched) return r;
  const OpTree tree = BuildOpTree(m);
  for (size_t k = 0; k < ranges.size(); ++k) {
    const uint32_t e = ranges[k];
    CounterRange row{.ts_ns = t.ts(e),
                     .dur_ns = m.dur_ns[e],
                     .pid = m.pid_of(e),
                     .tid = m.tid_of(e),
                     .name = m.name_of(e),
                     .op_stack = CpuOpStack(m, tree, calls[k])};
    // lower_bound, not ranges::equal_range: clang 14 cannot build ranges::subrange with
    // libstdc++ 12, and the sanitizer builds use clang.
    auto it =
        std::ranges::lower_bound(m.range_counters, e, {}, &trace::TraceModel::RangeCounter::event);
    for (; it != m.range_counters.end() && it->event == e; ++it)
      row.counters.emplace_back(m.names[it->name], it->value);
    r.rows.push_back(std::move(row));
  }
  return r;
}

}  // namespace trainprof::analysis
