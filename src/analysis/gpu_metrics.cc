#include "analysis/gpu_metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include "analysis/intervals.h"
#include "analysis/kernel_class.h"

namespace trainprof::analysis {

using trace::EventKind;

namespace {

struct Segment {
  int64_t begin, end;
  double value;
};

// Sweep over kernels: where the summed blocks per SM is above 0, min(sum, 1).
std::vector<Segment> SmEfficiencySegments(const trace::TraceModel& m,
                                          const std::vector<size_t>& kernels) {
  struct Edge {
    int64_t t;
    bool start;
    double v;
  };
  std::vector<Edge> edges;
  for (size_t i : kernels) {
    float b = m.blocks_per_sm_of(i);
    if (!(b > 0)) continue;
    edges.push_back({m.ts_ns[i], true, b});
    edges.push_back({m.end_ns(i), false, b});
  }
  std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) {
    return a.t != b.t ? a.t < b.t : (a.start && !b.start);
  });
  std::vector<Segment> out;
  double running = 0;
  for (size_t i = 0; i + 1 < edges.size(); ++i) {
    running += edges[i].start ? edges[i].v : -edges[i].v;
    if (running < 1e-9) running = 0;
    if (running > 0 && edges[i + 1].t > edges[i].t)
      out.push_back({edges[i].t, edges[i + 1].t, std::min(running, 1.0)});
  }
  return out;
}

// The time the plugin's curves cover: its first "PyTorch Profiler" span, else every event's.
std::pair<int64_t, int64_t> CurveRange(const trace::TraceModel& m) {
  for (size_t i = 0; i < m.size(); ++i)
    if (m.kind[i] == EventKind::kSpan && m.name_of(i).starts_with("PyTorch Profiler"))
      return {m.ts_ns[i], m.end_ns(i)};
  int64_t begin = std::numeric_limits<int64_t>::max(), end = std::numeric_limits<int64_t>::min();
  for (size_t i = 0; i < m.size(); ++i) {
    begin = std::min(begin, m.ts_ns[i]);
    end = std::max(end, m.end_ns(i));
  }
  return {begin, end};
}

// The plugin's counter curves over the whole trace [begin, end]: utilization in buckets of 1 µs
// times a power of ten, at most 100, and SM efficiency per segment.
void AddCurves(const Intervals& busy, const std::vector<Segment>& sm, int64_t begin, int64_t end,
               GpuSummary& g) {
  const int64_t range = end - begin;
  if (range <= 0) return;
  int64_t bucket = 1000;
  while (range > 100 * bucket) bucket *= 10;
  const int64_t nb = std::max<int64_t>(range / bucket, 1);
  g.utilization_curve.push_back({begin, 1});
  g.utilization_curve.push_back({begin, 0});
  for (int64_t b = 0; b < nb; ++b) {
    const int64_t lo = begin + b * bucket;
    const int64_t hi = b + 1 == nb ? end : lo + bucket;
    g.utilization_curve.push_back({lo, 100.0 * static_cast<double>(LengthWithin(busy, lo, hi)) /
                                           static_cast<double>(hi - lo)});
  }
  g.utilization_curve.push_back({end, 0});
  g.sm_efficiency_curve.push_back({begin, 1});
  g.sm_efficiency_curve.push_back({begin, 0});
  for (const Segment& s : sm) {
    g.sm_efficiency_curve.push_back({s.begin, s.value});
    g.sm_efficiency_curve.push_back({s.end, 0});
  }
}

}  // namespace

std::vector<GpuSummary> ComputeGpuSummaries(const trace::TraceModel& m, const StepsResult& steps,
                                            bool with_curves) {
  std::map<int64_t, std::vector<size_t>> by_device;
  for (size_t i = 0; i < m.size(); ++i)
    if (m.kind[i] == EventKind::kKernel) by_device[m.device_of(i)].push_back(i);
  const auto [curve_begin, curve_end] =
      with_curves ? CurveRange(m) : std::pair<int64_t, int64_t>{0, 0};
  std::vector<GpuSummary> out;
  if (steps.steps.empty()) return out;
  const int64_t s_begin = steps.steps.front().begin_ns;
  const int64_t s_end = steps.steps.back().end_ns;
  const double span = static_cast<double>(std::max<int64_t>(s_end - s_begin, 1));
  std::vector<int8_t> tc(m.names.size(), -1);

  for (auto& [dev, kernels] : by_device) {
    GpuSummary g;
    g.device = dev;
    if (const trace::DeviceInfo* d = m.FindDevice(dev)) {
      g.name = d->name;
      g.memory_bytes = d->total_memory_bytes;
      g.arch = d->arch;
      g.num_sms = d->num_sms;
    }
    g.kernels = static_cast<int64_t>(kernels.size());
    Intervals busy;
    double occ_sum = 0, occ_w = 0;
    int64_t tc_ns = 0;
    for (size_t i : kernels) {
      AppendForUnion(busy, {m.ts_ns[i], m.end_ns(i)});
      int64_t clipped =
          std::max<int64_t>(0, std::min(m.end_ns(i), s_end) - std::max(m.ts_ns[i], s_begin));
      g.kernel_ns += clipped;
      float occ = m.occupancy_pct_of(i);
      if (occ >= 0) {
        occ_sum += occ * static_cast<double>(clipped);
        occ_w += static_cast<double>(clipped);
      }
      int8_t& t = tc[m.name[i]];
      if (t < 0) t = UsesTensorCores(m.name_of(i)) ? 1 : 0;
      if (t) tc_ns += clipped;
    }
    busy = Union(std::move(busy));
    g.utilization_pct = 100.0 * static_cast<double>(LengthWithin(busy, s_begin, s_end)) / span;
    if (occ_w > 0) g.occupancy_pct = occ_sum / occ_w;
    if (g.kernel_ns > 0)
      g.tensor_core_pct = 100.0 * static_cast<double>(tc_ns) / static_cast<double>(g.kernel_ns);

    std::vector<Segment> sm = SmEfficiencySegments(m, kernels);
    double sm_area = 0;
    bool sm_inside = false;
    for (const Segment& s : sm) {
      int64_t lo = std::max(s.begin, s_begin), hi = std::min(s.end, s_end);
      if (hi > lo) {
        sm_area += s.value * static_cast<double>(hi - lo);
        sm_inside = true;
      }
    }
    if (sm_inside) g.sm_efficiency_pct = 100.0 * sm_area / span;

    if (with_curves) AddCurves(busy, sm, curve_begin, curve_end, g);
    out.push_back(std::move(g));
  }
  return out;
}

}  // namespace trainprof::analysis
