#include "analysis/hta/hta_launches.h"

#include <algorithm>
#include <set>
#include <string>
#include <utility>

#include "analysis/hta/hta_events.h"
#include "analysis/kernel_class.h"

namespace trainprof::analysis {

HtaOptions RankHtaOptions(const trace::TraceModel& m, const HtaOptions& o) {
  HtaOptions hta = o;
  if (!hta.hta_compat) return hta;
  std::set<std::string> names;
  for (size_t i = 0; i < m.size() && names.size() < 2; ++i)
    if (ProfilerStepNumber(m.name_of(i)) >= 0) names.insert(m.name_of(i));
  hta.compat_drop_last_step = names.size() >= 2 && !hta.keep_last_step;
  return hta;
}

std::vector<KernelLaunch> CudaKernelLaunches(const trace::TraceModel& m, const StepsResult& steps,
                                             const HtaOptions& o, int64_t* trace_duration_ns) {
  return CudaKernelLaunches(SelectHtaEvents(m, steps, o), trace_duration_ns);
}

std::vector<KernelLaunch> CudaKernelLaunches(const HtaEvents& ev, int64_t* trace_duration_ns) {
  const trace::TraceModel& m = ev.model();
  if (trace_duration_ns != nullptr) *trace_duration_ns = ev.last_ts - ev.first_ts;
  std::vector<std::pair<int64_t, KernelLaunch>> rows;  // (the launch call's event, row)
  std::vector<int8_t> is_launch(m.names.size(), -1);
  for (const HtaEv& e : ev.ev) {
    if (!trace::IsGpuKind(m.kind[e.event])) continue;
    const HtaLaunch l = LaunchOf(ev.times, e);
    if (l.ts == kNoLaunch) continue;
    int8_t& il = is_launch[l.name];
    if (il < 0) il = IsLaunchCallName(m.names[l.name], ev.compat) ? 1 : 0;
    if (!il) continue;
    const trace::Track& where = m.tracks[m.track[e.event]];
    rows.push_back({m.launcher[e.event],
                    {.correlation = m.correlation[e.event],
                     .cpu_ns = l.dur,
                     .gpu_ns = e.end - e.ts,
                     .delay_ns = std::max<int64_t>(0, e.ts - (l.ts + l.dur)),
                     .launch_ts_ns = l.ts,
                     .gpu_ts_ns = e.ts,
                     .stream = ev.times.stream(e.event),
                     .pid = where.pid,
                     .tid = where.tid}});
  }
  // HTA's rows follow its launch calls in the file's order (its merge on correlation keeps the
  // CPU side's order, and Kineto writes each thread's calls together).
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<KernelLaunch> out;
  out.reserve(rows.size());
  for (const auto& r : rows) out.push_back(r.second);
  return out;
}

}  // namespace trainprof::analysis
