#include "analysis/hta_counter_rows.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "analysis/kernel_class.h"

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

// The cpu_ops around each of `calls` (events on one thread), outermost first: one sweep over
// the thread's ops and calls by start (longer first), keeping the open ops on a stack.
std::map<uint32_t, std::vector<std::string>> OpStacks(const trace::TraceModel& m,
                                                      const std::vector<uint32_t>& calls) {
  std::map<uint32_t, std::vector<uint32_t>> by_track;
  for (uint32_t c : calls) by_track[m.track[c]].push_back(c);
  for (size_t i = 0; i < m.size(); ++i)
    if (m.kind[i] == EventKind::kCpuOp && by_track.contains(m.track[i]))
      by_track[m.track[i]].push_back(static_cast<uint32_t>(i));
  std::map<uint32_t, std::vector<std::string>> out;
  for (auto& [track, evs] : by_track) {
    std::ranges::stable_sort(evs, [&](uint32_t a, uint32_t b) {
      return m.ts_ns[a] != m.ts_ns[b] ? m.ts_ns[a] < m.ts_ns[b] : m.dur_ns[a] > m.dur_ns[b];
    });
    std::vector<uint32_t> open;
    for (uint32_t e : evs) {
      while (!open.empty() && m.end_ns(open.back()) < m.end_ns(e)) open.pop_back();
      if (m.kind[e] != EventKind::kCpuOp) {
        auto& stack = out[e];
        for (uint32_t op : open) stack.push_back(m.name_of(op));
        continue;
      }
      open.push_back(e);
    }
  }
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
  std::map<uint32_t, std::vector<std::string>> stacks = OpStacks(m, calls);
  for (size_t k = 0; k < ranges.size(); ++k) {
    const uint32_t e = ranges[k];
    CounterRange row{.ts_ns = t.ts(e),
                     .dur_ns = m.dur_ns[e],
                     .pid = m.pid_of(e),
                     .tid = m.tid_of(e),
                     .name = m.name_of(e),
                     .op_stack = std::move(stacks[calls[k]])};
    auto [lo, hi] =
        std::ranges::equal_range(m.range_counters, e, {}, &trace::TraceModel::RangeCounter::event);
    for (auto it = lo; it != hi; ++it) row.counters.emplace_back(m.names[it->name], it->value);
    r.rows.push_back(std::move(row));
  }
  return r;
}

}  // namespace trainprof::analysis
