#include "analysis/hta/hta.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "analysis/hta/hta_events.h"
#include "analysis/intervals.h"
#include "base/stats.h"

namespace trainprof::analysis {

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
    return kHtaOtherType;
  return static_cast<int>(KernelType::kComputation);
}

Temporal TemporalBreakdown(const HtaEvents& e) {
  Temporal t;
  if (e.busy.empty()) return t;
  t.span_ns = e.busy.back().end - e.busy.front().begin;
  t.idle_ns = t.span_ns - Length(e.busy);
  t.compute_ns = Length(e.comp);
  t.non_compute_ns = t.span_ns - t.compute_ns - t.idle_ns;
  return t;
}

namespace {

// pandas' linear quantile of sorted `v`.
double PandasQuantile(const std::vector<int64_t>& v, double q) {
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(pos), hi = std::min(lo + 1, v.size() - 1);
  return static_cast<double>(v[lo]) +
         static_cast<double>(v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

// pandas' describe() of `v` (sorted here) into out[0..kIntervalStats).
void PandasDescribe(std::vector<int64_t>& v, double* out) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::fill(out, out + kIntervalStats, nan);
  out[kStatCount] = static_cast<double>(v.size());
  if (v.empty()) return;
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (int64_t x : v) sum += static_cast<double>(x);
  const double n = static_cast<double>(v.size()), mean = sum / n;
  double sq = 0;
  for (int64_t x : v) sq += (static_cast<double>(x) - mean) * (static_cast<double>(x) - mean);
  out[kStatMean] = mean;
  if (v.size() > 1) out[kStatStd] = std::sqrt(sq / (n - 1));
  out[kStatMin] = static_cast<double>(v.front());
  out[kStatQ25] = PandasQuantile(v, 0.25);
  out[kStatQ50] = PandasQuantile(v, 0.5);
  out[kStatQ75] = PandasQuantile(v, 0.75);
  out[kStatMax] = static_cast<double>(v.back());
}

}  // namespace

// Kernels and memory copies / sets of each stream in start order.
std::vector<StreamIdle> IdleTimeBreakdown(const HtaEvents& e, const HtaOptions& o) {
  const trace::TraceModel& m = e.model();
  std::vector<int64_t> order;
  std::unordered_map<int64_t, std::vector<const HtaEv*>> by_stream;
  for (const HtaEv& ev : e.ev) {
    // A CPU op here is a Triton launch HTA counts on its stream kwarg (compat only).
    const bool host_stream = m.kind[ev.event] == trace::EventKind::kCpuOp;
    if (!trace::IsGpuKind(m.kind[ev.event]) && !host_stream) continue;
    const int64_t stream = e.times.stream(ev.event);
    auto [it, fresh] = by_stream.try_emplace(stream);
    if (fresh) order.push_back(stream);
    it->second.push_back(&ev);
  }
  std::vector<StreamIdle> out;
  for (int64_t s : order) {
    auto& k = by_stream[s];
    std::stable_sort(k.begin(), k.end(),
                     [](const HtaEv* a, const HtaEv* b) { return a->ts < b->ts; });
    StreamIdle si;
    si.stream = s;
    si.present[kIdleOther] = true;
    std::array<std::vector<int64_t>, kNumIdle> lengths;  // --hta-compat's interval statistics
    int64_t prev_end = k.front()->end;
    for (size_t i = 1; i < k.size(); ++i) {
      const HtaEv& ev = *k[i];
      int64_t gap = ev.ts - prev_end;
      prev_end = o.hta_compat ? ev.end : std::max(prev_end, ev.end);
      if (!o.hta_compat && gap <= 0) continue;  // back to back or overlapping: not idle
      const HtaLaunch l = LaunchOf(e.times, ev);
      bool host = l.ts != kNoLaunch && l.ts > ev.ts - gap;
      int c = host ? kHostWait : gap < o.consecutive_kernel_delay_ns ? kKernelWait : kIdleOther;
      si.ns[c] += gap;
      si.gaps[c] += 1;
      si.present[c] = true;
      if (o.hta_compat) lengths[c].push_back(gap);
    }
    if (o.hta_compat) {
      si.interval_stats.resize(static_cast<size_t>(kNumIdle) * kIntervalStats);
      for (int c = 0; c < kNumIdle; ++c)
        PandasDescribe(lengths[c], &si.interval_stats[c * kIntervalStats]);
    }
    out.push_back(si);
  }
  return out;
}

namespace {

constexpr int kTypeBits[3] = {1, 2, 4};  // computation, communication, memory

// Time under each mask of overlapping types, from the edges of the three unions. Unions are
// sorted and disjoint, so a sweep takes their edges in time order straight from them (a sorted
// copy of the edges was 17 MB on a 1 GB trace). HTA's merge (--hta-compat) can keep an interval
// that ends before it begins, whose edges are out of order: then the copy is sorted.
std::array<int64_t, 8> TimeByTypeMask(const Intervals* const (&per_type)[3]) {
  bool ordered = true;
  for (int t = 0; t < 3; ++t)
    for (size_t k = 0; k < per_type[t]->size(); ++k) {
      const Interval& i = (*per_type[t])[k];
      ordered = ordered && i.begin <= i.end && (k == 0 || (*per_type[t])[k - 1].end <= i.begin);
    }
  std::array<int64_t, 8> by_mask{};
  int running = 0;  // the mask of the types busy since `at`
  int64_t at = 0;
  auto edge = [&](int64_t ts, int delta) {
    if (running > 0 && running < 8) by_mask[running] += ts - at;
    running += delta;
    at = ts;
  };
  if (!ordered) {
    std::vector<std::pair<int64_t, int>> copy;  // (time, delta)
    for (int t = 0; t < 3; ++t)
      for (const Interval& i : *per_type[t])
        copy.insert(copy.end(), {{i.begin, kTypeBits[t]}, {i.end, -kTypeBits[t]}});
    std::stable_sort(copy.begin(), copy.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [ts, delta] : copy) edge(ts, delta);
    return by_mask;
  }
  size_t next[3] = {0, 0, 0};  // edge k of a union: interval k / 2's begin (k even) or end
  auto next_ts = [&](int t) {
    const Interval& i = (*per_type[t])[next[t] / 2];
    return next[t] % 2 == 0 ? i.begin : i.end;
  };
  for (;;) {
    int t = -1;
    for (int k = 0; k < 3; ++k)
      if (next[k] < 2 * per_type[k]->size() && (t < 0 || next_ts(k) < next_ts(t))) t = k;
    if (t < 0) break;
    const int64_t ts = next_ts(t);
    edge(ts, next[t]++ % 2 == 0 ? kTypeBits[t] : -kTypeBits[t]);
  }
  return by_mask;
}

}  // namespace

std::vector<std::pair<std::string, int64_t>> KernelTypeBreakdown(const HtaEvents& e) {
  const char* kNames[3] = {"COMPUTATION", "COMMUNICATION", "MEMORY"};
  const Intervals* const per_type[3] = {&e.comp, &e.comm, &e.mem};
  const std::array<int64_t, 8> by_mask = TimeByTypeMask(per_type);
  std::vector<std::pair<std::string, int64_t>> out;
  for (int mask = 1; mask < 8; ++mask) {
    if (by_mask[mask] == 0) continue;
    std::string label;
    for (int t = 0; t < 3; ++t)
      if (mask & kTypeBits[t])
        label += (label.empty() ? "" : " overlapping ") + std::string(kNames[t]);
    out.emplace_back(label, by_mask[mask]);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

// Top kernels per type, with true per-instance statistics (also for "others"); HTA's fold with
// --hta-compat.
std::vector<KernelStats> GpuKernelBreakdown(const HtaEvents& ev, const HtaOptions& o) {
  const trace::TraceModel& m = ev.model();
  std::vector<KernelStats> result;
  for (int t = 0; t < 3; ++t) {
    std::unordered_map<uint32_t, KernelStats> by_name;
    for (const HtaEv& e : ev.ev) {
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
    if (o.hta_compat && others) {
      std::vector<KernelStats> named;
      named.reserve(rows.size());
      for (auto& [name, stats] : rows) {
        named.push_back(std::move(stats));
        named.back().name = m.names[name];
        named.back().type = static_cast<KernelType>(t);
      }
      std::vector<KernelStats> folded =
          HtaFold(std::move(named), {.top = top, .duration_ratio = o.duration_ratio});
      result.insert(result.end(), folded.begin(), folded.end());
      continue;
    }
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
    for (const HtaEv& e : ev.ev) {
      if (e.type != t) continue;
      size_t k = slot[m.name[e.event]];
      double d = static_cast<double>(e.end - e.ts) - out[k].mean_ns;
      sq[k] += d * d;
    }
    for (size_t k = 0; k < out.size(); ++k)
      out[k].std_ns =
          out[k].count > 1 ? std::sqrt(sq[k] / static_cast<double>(out[k].count - 1)) : 0;
    result.insert(result.end(), out.begin(), out.end());
  }

  return result;
}

// The share of communication time with compute running; nullopt without communication.
std::optional<double> CommCompOverlap(const HtaEvents& e) {
  if (e.comm.empty()) return std::nullopt;
  return 100.0 * static_cast<double>(Length(Intersect(e.comp, e.comm))) /
         static_cast<double>(Length(e.comm));
}

bool IsGraphLaunchName(std::string_view n) {
  return n == "cudaGraphLaunch" || n == "hipGraphLaunch" || n == "cuGraphLaunch";
}

// Kernel launches: the launch call matched to the GPU work it started. A graph launch is one
// call for all of its kernels: counted once, at its first kernel in the trace, and never as
// a short kernel (the graph's work is all of its kernels).
LaunchStats CudaKernelLaunchStats(const HtaEvents& ev, const HtaOptions& o) {
  const trace::TraceModel& m = ev.model();
  LaunchStats s;
  std::vector<double> delays;
  double launch_sum = 0;
  std::vector<int8_t> is_launch(m.names.size(), -1);
  std::set<std::pair<int64_t, uint32_t>> graphs_seen;  // (launch start, name)
  for (const HtaEv& e : ev.ev) {
    const HtaLaunch l = LaunchOf(ev.times, e);
    if (l.ts == kNoLaunch) continue;
    int8_t& il = is_launch[l.name];
    if (il < 0) il = IsLaunchCallName(m.names[l.name], o.hta_compat) ? 1 : 0;
    if (!il) continue;
    s.gpu_ns += e.end - e.ts;
    const bool graph = IsGraphLaunchName(m.names[l.name]);
    if (graph) {
      ++s.graph_kernels;
      s.graph_gpu_ns += e.end - e.ts;
      if (!graphs_seen.insert({l.ts, l.name}).second) continue;  // not the graph's first kernel
      ++s.graph_launches;
    }

    s.launches++;
    int64_t gpu_dur = e.end - e.ts;
    // From the end of the launch call to the start of the GPU work (HTA 0.6.1 agrees: its
    // counts on the shared traces match this, not its older ts_gpu - ts_cpu + dur_cpu).
    int64_t delay = e.ts - (l.ts + l.dur);
    if (!graph && l.dur <= o.runtime_cutoff_ns && gpu_dur < l.dur) s.short_kernels++;
    if (l.dur > o.runtime_cutoff_ns) s.runtime_outliers++;
    if (delay > o.launch_delay_cutoff_ns) s.launch_delay_outliers++;
    delays.push_back(static_cast<double>(delay));
    launch_sum += static_cast<double>(l.dur);
  }
  if (!delays.empty()) {
    double sum = 0, mx = delays.front();
    for (double d : delays) sum += d, mx = std::max(mx, d);
    s.mean_delay_ns = sum / delays.size();
    s.max_delay_ns = mx;
    s.mean_launch_ns = launch_sum / delays.size();
    s.median_delay_ns = base::Quantile(delays, 0.5);
    s.p95_delay_ns = base::Quantile(delays, 0.95);
  }

  return s;
}

HtaResult ComputeHta(const trace::TraceModel& m, const StepsResult& steps, const HtaOptions& o) {
  HtaResult r;
  r.rank = m.rank;
  r.queues = QueueLengthSummary(m);  // first: its working memory and `ev` are never held together
  const HtaEvents ev = SelectHtaEvents(m, steps, o);
  r.gpu_events = static_cast<int64_t>(ev.ev.size());
  r.temporal = TemporalBreakdown(ev);
  r.idle = IdleTimeBreakdown(ev, o);
  r.kernel_types = KernelTypeBreakdown(ev);
  r.top_kernels = GpuKernelBreakdown(ev, o);
  const std::optional<double> overlap = CommCompOverlap(ev);
  r.has_communication = overlap.has_value();
  r.comm_comp_overlap_pct = overlap.value_or(0);
  r.launch = CudaKernelLaunchStats(ev, o);
  return r;
}

}  // namespace trainprof::analysis
