#include "analysis/hta/hta_stragglers.h"

#include <algorithm>
#include <map>

#include "analysis/steps.h"

namespace trainprof::analysis {

namespace {

struct StepRange {
  int64_t ts, end, step;
};

// The step whose range holds `ts` (the last listed, as HTA's loop keeps the last match), or -1.
int64_t StepAt(const std::vector<StepRange>& ranges, int64_t ts) {
  int64_t step = -1;
  for (const StepRange& r : ranges)
    if (r.ts <= ts && ts < r.end) step = r.step;
  return step;
}

}  // namespace

HtaStragglerRows HtaStragglerData(const trace::TraceModel& m, const HtaOptions& o) {
  return HtaStragglerData(SelectHtaEvents(m, StepsResult{}, o));
}

HtaStragglerRows HtaStragglerData(const HtaEvents& ev) {
  const trace::TraceModel& m = ev.model();
  const HtaTimes& t = ev.times;
  std::vector<StepRange> ranges;
  HtaStragglerRows out;
  for (size_t i = 0; i < m.size(); ++i) {
    const int64_t n = ProfilerStepNumber(m.name_of(i));
    if (n < 0) continue;
    out.step_numbers.push_back(n);
    if (t.stream(i) == -1) ranges.push_back({t.ts(i), t.end(i), n});
  }
  std::vector<int64_t> step_of(m.size(), -1);  // kept CPU events' steps, by event
  std::map<int64_t, StepSpan> spans;
  auto widen = [&](int64_t step, int64_t ts, int64_t end) {
    if (step < 0) return;
    auto [it, fresh] = spans.try_emplace(step, StepSpan{step, ts, end});
    if (!fresh) {
      it->second.first_ns = std::min(it->second.first_ns, ts);
      it->second.last_end_ns = std::max(it->second.last_end_ns, end);
    }
  };
  for (size_t i = 0; i < m.size(); ++i) {
    if (t.stream(i) != -1 || m.kind[i] == trace::EventKind::kSpan || t.ts(i) >= ev.cpu_before)
      continue;
    step_of[i] = StepAt(ranges, t.ts(i));
    widen(step_of[i], t.ts(i), t.end(i));
  }
  for (const HtaEv& e : ev.ev) {  // GPU work: its launch call's step
    const int32_t call = m.launcher.empty() ? -1 : m.launcher[e.event];
    const int64_t step = call >= 0 ? step_of[call] : -1;
    widen(step, e.ts, e.end);
    const int64_t stream = t.stream(e.event);
    if (step > 0 && stream > 0 && m.name_of(e.event).starts_with("ncclKernel"))
      out.comm.push_back({step, e.ts, e.end - e.ts, stream, m.name_of(e.event)});
  }
  std::stable_sort(
      out.comm.begin(), out.comm.end(),
      [](const CommKernelRow& a, const CommKernelRow& b) { return a.ts_ns < b.ts_ns; });
  for (const auto& [step, span] : spans) out.steps.push_back(span);
  std::sort(out.step_numbers.begin(), out.step_numbers.end());
  out.step_numbers.erase(std::unique(out.step_numbers.begin(), out.step_numbers.end()),
                         out.step_numbers.end());
  return out;
}

}  // namespace trainprof::analysis
