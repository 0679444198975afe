#include "analysis/hta/hta_events.h"

#include <algorithm>
#include <unordered_set>

#include "analysis/kernel_class.h"

namespace trainprof::analysis {

using trace::EventKind;

HtaTimes::HtaTimes(const trace::TraceModel& model, bool hta_compat)
    : m(model), compat(hta_compat), base(model.base_time_ns) {
  if (hta_compat)
    for (size_t i = 0; i < m.size() && !round; ++i) round = m.ts_ns[i] % 1000 != 0;
}

HtaLaunch LaunchOf(const HtaTimes& t, const HtaEv& e) {
  int32_t l = t.m.launcher.empty() ? -1 : t.m.launcher[e.event];
  if (l < 0) return {};
  return {t.ts(l), t.end(l) - t.ts(l), t.m.name[l]};
}

namespace {

std::vector<HtaEv> SelectEvents(const HtaTimes& t, const StepsResult& steps, const HtaOptions& o,
                                HtaEvents* span) {
  const trace::TraceModel& m = t.m;
  std::vector<HtaEv> out;
  std::vector<int> type_cache(m.names.size(), -2);
  auto ev = [&](size_t i) {
    int& ty = type_cache[m.name[i]];
    if (ty == -2)
      ty = o.hta_compat ? HtaKernelType(m.name_of(i))
                        : static_cast<int>(ClassifyGpuEvent(m.kind[i], m.name_of(i)));
    return HtaEv{t.ts(i), t.end(i), static_cast<uint32_t>(i), static_cast<int8_t>(ty)};
  };
  if (o.hta_compat) {
    auto is_cpu = [&](size_t i) { return t.stream(i) == -1 && m.kind[i] != EventKind::kSpan; };
    int64_t last_start = std::numeric_limits<int64_t>::max();
    if (o.compat_drop_last_step) {
      bool any = false;
      int64_t ls = std::numeric_limits<int64_t>::min();
      for (size_t i = 0; i < m.size(); ++i)
        if (is_cpu(i) && ProfilerStepNumber(m.name_of(i)) >= 0) {
          ls = std::max(ls, t.ts(i));
          any = true;
        }
      if (any) last_start = ls;
    }
    std::unordered_set<int64_t> kept;
    int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
    for (size_t i = 0; i < m.size(); ++i) {
      if (!is_cpu(i) || t.ts(i) >= last_start) continue;
      kept.insert(m.correlation[i]);
      lo = std::min(lo, t.ts(i));
      hi = std::max(hi, t.ts(i));
    }
    for (size_t i = 0; i < m.size(); ++i) {
      if (t.stream(i) == -1 || m.kind[i] == EventKind::kSpan) continue;
      if (last_start != std::numeric_limits<int64_t>::max() && !kept.count(m.correlation[i]))
        continue;
      out.push_back(ev(i));
      lo = std::min(lo, t.ts(i));
      hi = std::max(hi, t.ts(i));
    }
    if (lo <= hi) span->first_ts = lo, span->last_ts = hi;
    span->cpu_before = last_start;
    return out;
  }
  // Ours: the GPU work launched inside the analysed steps, at exact times.
  out.reserve(std::ranges::count_if(m.kind, trace::IsGpuKind));
  bool windowed = !steps.synthetic && !steps.steps.empty();
  int64_t host_lo = windowed ? steps.steps.front().host_begin_ns : 0;
  int64_t host_hi = windowed ? steps.steps.back().host_end_ns : 0;
  int64_t lo = windowed ? steps.steps.front().begin_ns : 0;
  int64_t hi = windowed ? steps.steps.back().end_ns : 0;
  for (size_t i = 0; i < m.size(); ++i) {
    if (!trace::IsGpuKind(m.kind[i])) continue;
    int32_t l = m.launcher.empty() ? -1 : m.launcher[i];
    if (windowed) {
      bool in = l >= 0 ? m.ts_ns[l] >= host_lo && m.ts_ns[l] < host_hi
                       : m.ts_ns[i] >= lo && m.ts_ns[i] < hi;
      if (!in) continue;
    }
    out.push_back(ev(i));
  }
  return out;
}

// HTA merges intervals sorted by start, opening a new group when a start lies after every end
// seen so far; an interval made negative by its µs rounding stays in, with its negative length.
Intervals HtaMerge(Intervals v) {
  // A group's end is the largest end in it, whatever the order of equal starts.
  std::sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  size_t n = 0;  // in place: never more groups than intervals
  int64_t running_max = std::numeric_limits<int64_t>::min();
  for (const Interval& i : v) {
    if (n == 0 || i.begin > running_max)
      v[n++] = i;
    else
      v[n - 1].end = std::max(v[n - 1].end, i.end);
    running_max = std::max(running_max, i.end);
  }
  v.resize(n);
  v.shrink_to_fit();
  return v;
}

Intervals UnionOf(const std::vector<HtaEv>& ev, int type, bool all, bool compat) {
  Intervals v;  // room made once, as in the overview (intervals.h)
  v.reserve(all ? ev.size() : static_cast<size_t>(std::ranges::count_if(ev, [&](const HtaEv& e) {
    return e.type == type;
  })));
  for (const HtaEv& e : ev) {
    if (!all && e.type != type) continue;
    if (compat)
      v.push_back({e.ts, e.end});  // HtaMerge keeps intervals negative after rounding
    else
      AppendForUnion(v, {e.ts, e.end});
  }
  return compat ? HtaMerge(std::move(v)) : Union(std::move(v));
}

}  // namespace

HtaEvents SelectHtaEvents(const trace::TraceModel& m, const StepsResult& steps,
                          const HtaOptions& o) {
  constexpr int kComp = static_cast<int>(KernelType::kComputation);
  constexpr int kComm = static_cast<int>(KernelType::kCommunication);
  constexpr int kMem = static_cast<int>(KernelType::kMemory);
  HtaEvents e{.times = HtaTimes(m, o.hta_compat), .compat = o.hta_compat};
  e.ev = SelectEvents(e.times, steps, o, &e);
  e.busy = UnionOf(e.ev, 0, true, o.hta_compat);
  e.comp = UnionOf(e.ev, kComp, false, o.hta_compat);
  e.comm = UnionOf(e.ev, kComm, false, o.hta_compat);
  e.mem = UnionOf(e.ev, kMem, false, o.hta_compat);
  return e;
}

}  // namespace trainprof::analysis
