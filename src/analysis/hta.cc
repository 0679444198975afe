#include "analysis/hta.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "analysis/intervals.h"

namespace trainprof::analysis {

using trace::EventKind;

namespace {

constexpr int64_t kNoLaunch = std::numeric_limits<int64_t>::min();
constexpr int kOtherType = -1;  // HTA's OTHER: neither analysed nor counted as compute

// Event times as a selection sees them: exact, or (--hta-compat) rounded to whole µs as HTA
// does, start up and end down, when any timestamp has a fraction. HTA holds times as float64 µs:
// at today's epoch (1.7e15 µs) that is a 0.25 µs grid, so the rounding acts on the float, not on
// the written decimals, which are after baseTimeNanoseconds when the trace has one.
struct Times {
  const trace::TraceModel& m;
  bool round = false;
  int64_t base = 0;

  Times(const trace::TraceModel& model, bool hta_compat) : m(model), base(model.base_time_ns) {
    if (hta_compat)
      for (int64_t t : m.ts_ns)
        if (t % 1000 != 0) round = true;
  }
  double Us(int64_t ns) const {
    ns -= base;
    return static_cast<double>(ns / 1000) + static_cast<double>(ns % 1000) / 1000.0;
  }
  int64_t ts(size_t i) const {
    if (!round) return m.ts_ns[i];
    return static_cast<int64_t>(std::ceil(Us(m.ts_ns[i]))) * 1000 + base;
  }
  int64_t end(size_t i) const {
    if (!round) return m.end_ns(i);
    double e = Us(m.ts_ns[i]) + static_cast<double>(m.dur_ns[i]) / 1000.0;
    return static_cast<int64_t>(std::floor(e)) * 1000 + base;
  }
};

// One GPU event as an HTA breakdown sees it: its times, and the rest from the model. Small,
// since a big trace has a million of them.
struct Ev {
  int64_t ts, end;
  uint32_t event;  // index in the model
  int8_t type;     // KernelType as int, or kOtherType
};

// The launch call of an event's GPU work, on the same clock as the event.
struct Launch {
  int64_t ts = kNoLaunch, dur = 0;
  uint32_t name = 0;
};

Launch LaunchOf(const Times& t, const Ev& e) {
  int32_t l = t.m.launcher.empty() ? -1 : t.m.launcher[e.event];
  if (l < 0) return {};
  return {t.ts(l), t.end(l) - t.ts(l), t.m.name[l]};
}

std::vector<Ev> SelectEvents(const Times& t, const StepsResult& steps, const HtaOptions& o) {
  const trace::TraceModel& m = t.m;
  std::vector<Ev> out;
  std::vector<int> type_cache(m.names.size(), -2);
  auto ev = [&](size_t i) {
    int& ty = type_cache[m.name[i]];
    if (ty == -2)
      ty = o.hta_compat ? HtaKernelType(m.name_of(i))
                        : static_cast<int>(ClassifyGpuEvent(m.kind[i], m.name_of(i)));
    return Ev{t.ts(i), t.end(i), static_cast<uint32_t>(i), static_cast<int8_t>(ty)};
  };
  if (o.hta_compat) {
    auto is_cpu = [&](size_t i) { return m.stream_of(i) == -1 && m.kind[i] != EventKind::kSpan; };
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
    for (size_t i = 0; i < m.size(); ++i)
      if (is_cpu(i) && t.ts(i) < last_start) kept.insert(m.correlation[i]);
    for (size_t i = 0; i < m.size(); ++i) {
      if (m.stream_of(i) == -1 || m.kind[i] == EventKind::kSpan) continue;
      if (last_start != std::numeric_limits<int64_t>::max() && !kept.count(m.correlation[i]))
        continue;
      out.push_back(ev(i));
    }
    return out;
  }
  // Ours: the GPU work launched inside the analysed steps, at exact times.
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

Intervals UnionOf(const std::vector<Ev>& ev, int type, bool all, bool compat) {
  Intervals v;
  for (const Ev& e : ev)
    if (all || e.type == type) v.push_back({e.ts, e.end});
  return compat ? HtaMerge(std::move(v)) : Union(std::move(v));
}

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  double pos = q * static_cast<double>(v.size() - 1);
  size_t lo = static_cast<size_t>(pos);
  size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

}  // namespace

const char* IdleCategoryName(int c) {
  static constexpr const char* kNames[] = {"host_wait", "kernel_wait", "other"};
  return kNames[c];
}

int HtaKernelType(std::string_view n) {
  // HTA: COMMUNICATION ^nccl.*Kernel; MEMORY ^Memcpy|^Memset|^dma;
  // OTHER .*Memcpy|^Memset|.*Sync; else COMPUTATION.
  if (n.starts_with("nccl") && n.find("Kernel", 4) != std::string_view::npos)
    return static_cast<int>(KernelType::kCommunication);
  if (n.starts_with("Memcpy") || n.starts_with("Memset") || n.starts_with("dma"))
    return static_cast<int>(KernelType::kMemory);
  if (n.find("Memcpy") != std::string_view::npos || n.find("Sync") != std::string_view::npos)
    return kOtherType;
  return static_cast<int>(KernelType::kComputation);
}

HtaResult ComputeHta(const trace::TraceModel& m, const StepsResult& steps, const HtaOptions& o) {
  HtaResult r;
  r.rank = m.rank;
  const Times times(m, o.hta_compat);
  std::vector<Ev> ev = SelectEvents(times, steps, o);
  r.gpu_events = static_cast<int64_t>(ev.size());
  constexpr int kComp = static_cast<int>(KernelType::kComputation);
  constexpr int kComm = static_cast<int>(KernelType::kCommunication);
  constexpr int kMem = static_cast<int>(KernelType::kMemory);

  // Temporal breakdown.
  Intervals busy = UnionOf(ev, 0, true, o.hta_compat);
  Intervals comp = UnionOf(ev, kComp, false, o.hta_compat);
  Intervals comm = UnionOf(ev, kComm, false, o.hta_compat);
  if (!busy.empty()) {
    r.temporal.span_ns = busy.back().end - busy.front().begin;
    r.temporal.idle_ns = r.temporal.span_ns - Length(busy);
    r.temporal.compute_ns = Length(comp);
    r.temporal.non_compute_ns = r.temporal.span_ns - r.temporal.compute_ns - r.temporal.idle_ns;
  }

  // Idle time per stream, kernels and memory copies / sets in start order.
  {
    std::vector<int64_t> order;
    std::unordered_map<int64_t, std::vector<const Ev*>> by_stream;
    for (const Ev& e : ev) {
      if (!trace::IsGpuKind(m.kind[e.event])) continue;
      int64_t stream = m.stream_of(e.event);
      auto [it, fresh] = by_stream.try_emplace(stream);
      if (fresh) order.push_back(stream);
      it->second.push_back(&e);
    }
    for (int64_t s : order) {
      auto& k = by_stream[s];
      std::stable_sort(k.begin(), k.end(), [](const Ev* a, const Ev* b) { return a->ts < b->ts; });
      StreamIdle si;
      si.stream = s;
      si.present[kIdleOther] = true;
      int64_t prev_end = k.front()->end;
      for (size_t i = 1; i < k.size(); ++i) {
        const Ev& e = *k[i];
        int64_t gap = e.ts - prev_end;
        prev_end = o.hta_compat ? e.end : std::max(prev_end, e.end);
        if (!o.hta_compat && gap <= 0) continue;  // back to back or overlapping: not idle
        const Launch l = LaunchOf(times, e);
        bool host = l.ts != kNoLaunch && l.ts > e.ts - gap;
        int c = host ? kHostWait : gap < o.consecutive_kernel_delay_ns ? kKernelWait : kIdleOther;
        si.ns[c] += gap;
        si.gaps[c] += 1;
        si.present[c] = true;
      }
      r.idle.push_back(si);
    }
  }

  // Kernel types and their overlaps.
  {
    const int kBits[3] = {1, 2, 4};
    const char* kNames[3] = {"COMPUTATION", "COMMUNICATION", "MEMORY"};
    struct Edge {
      int64_t t;
      int delta;
    };
    std::vector<Edge> edges;
    Intervals mem = UnionOf(ev, kMem, false, o.hta_compat);
    const Intervals* per_type[3] = {&comp, &comm, &mem};
    for (int t = 0; t < 3; ++t)
      for (const Interval& i : *per_type[t]) {
        edges.push_back({i.begin, kBits[t]});
        edges.push_back({i.end, -kBits[t]});
      }
    std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) { return a.t < b.t; });
    std::array<int64_t, 8> by_mask{};
    int running = 0;
    for (size_t i = 0; i + 1 < edges.size(); ++i) {
      running += edges[i].delta;
      if (running > 0 && running < 8) by_mask[running] += edges[i + 1].t - edges[i].t;
    }
    for (int mask = 1; mask < 8; ++mask) {
      if (by_mask[mask] == 0) continue;
      std::string label;
      for (int t = 0; t < 3; ++t)
        if (mask & kBits[t])
          label += (label.empty() ? "" : " overlapping ") + std::string(kNames[t]);
      r.kernel_types.emplace_back(label, by_mask[mask]);
    }
    std::stable_sort(r.kernel_types.begin(), r.kernel_types.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
  }

  // Top kernels per type, with true per-instance statistics (also for "others").
  for (int t = 0; t < 3; ++t) {
    std::unordered_map<uint32_t, KernelStats> by_name;
    for (const Ev& e : ev) {
      if (e.type != t) continue;
      KernelStats& s = by_name[m.name[e.event]];
      int64_t d = e.end - e.ts;
      if (s.count == 0) s.min_ns = s.max_ns = d;
      s.count++;
      s.sum_ns += d;
      s.min_ns = std::min(s.min_ns, d);
      s.max_ns = std::max(s.max_ns, d);
    }
    if (by_name.empty()) continue;
    std::vector<std::pair<uint32_t, KernelStats>> rows(by_name.begin(), by_name.end());
    std::sort(rows.begin(), rows.end(), [&](const auto& a, const auto& b) {
      return a.second.sum_ns != b.second.sum_ns ? a.second.sum_ns > b.second.sum_ns
                                                : m.names[a.first] < m.names[b.first];
    });
    std::unordered_map<uint32_t, size_t> slot;  // name -> row in the output (others last)
    size_t top = std::min<size_t>(rows.size(), static_cast<size_t>(std::max(o.top_kernels, 0)));
    bool others = rows.size() > top;
    std::vector<KernelStats> out(top + (others ? 1 : 0));
    for (size_t i = 0; i < rows.size(); ++i) {
      size_t k = i < top ? i : top;
      slot[rows[i].first] = k;
      KernelStats& s = out[k];
      const KernelStats& in = rows[i].second;
      if (s.count == 0) {
        s.min_ns = in.min_ns;
        s.max_ns = in.max_ns;
      }
      s.name = i < top ? m.names[rows[i].first] : "others";
      s.type = static_cast<KernelType>(t);
      s.count += in.count;
      s.sum_ns += in.sum_ns;
      s.min_ns = std::min(s.min_ns, in.min_ns);
      s.max_ns = std::max(s.max_ns, in.max_ns);
    }
    for (KernelStats& s : out) s.mean_ns = static_cast<double>(s.sum_ns) / s.count;
    std::vector<double> sq(out.size(), 0);
    for (const Ev& e : ev) {
      if (e.type != t) continue;
      size_t k = slot[m.name[e.event]];
      double d = static_cast<double>(e.end - e.ts) - out[k].mean_ns;
      sq[k] += d * d;
    }
    for (size_t k = 0; k < out.size(); ++k)
      out[k].std_ns =
          out[k].count > 1 ? std::sqrt(sq[k] / static_cast<double>(out[k].count - 1)) : 0;
    r.top_kernels.insert(r.top_kernels.end(), out.begin(), out.end());
  }

  // Communication-computation overlap: the share of communication time with compute running.
  r.has_communication = !comm.empty();
  if (r.has_communication)
    r.comm_comp_overlap_pct = 100.0 * static_cast<double>(Length(Intersect(comp, comm))) /
                              static_cast<double>(Length(comm));

  // Kernel launches: the launch call matched to the GPU work it started.
  {
    std::vector<double> delays;
    double launch_sum = 0;
    std::vector<int8_t> is_launch(m.names.size(), -1);
    for (const Ev& e : ev) {
      const Launch l = LaunchOf(times, e);
      if (l.ts == kNoLaunch) continue;
      int8_t& il = is_launch[l.name];
      if (il < 0) il = IsLaunchCallName(m.names[l.name], o.hta_compat) ? 1 : 0;
      if (!il) continue;
      LaunchStats& s = r.launch;
      s.launches++;
      int64_t gpu_dur = e.end - e.ts;
      // From the end of the launch call to the start of the GPU work (HTA 0.6.1 agrees: its
      // counts on the shared traces match this, not its older ts_gpu - ts_cpu + dur_cpu).
      int64_t delay = e.ts - (l.ts + l.dur);
      if (l.dur <= o.runtime_cutoff_ns && gpu_dur < l.dur) s.short_kernels++;
      if (l.dur > o.runtime_cutoff_ns) s.runtime_outliers++;
      if (delay > o.launch_delay_cutoff_ns) s.launch_delay_outliers++;
      delays.push_back(static_cast<double>(delay));
      launch_sum += static_cast<double>(l.dur);
    }
    if (!delays.empty()) {
      double sum = 0, mx = delays.front();
      for (double d : delays) sum += d, mx = std::max(mx, d);
      r.launch.mean_delay_ns = sum / delays.size();
      r.launch.max_delay_ns = mx;
      r.launch.mean_launch_ns = launch_sum / delays.size();
      r.launch.median_delay_ns = Quantile(delays, 0.5);
      r.launch.p95_delay_ns = Quantile(std::move(delays), 0.95);
    }
  }
  return r;
}

}  // namespace trainprof::analysis
