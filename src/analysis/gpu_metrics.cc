#include "analysis/gpu_metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include "analysis/intervals.h"
#include "analysis/kernel_class.h"
#include "base/radix_sort.h"

namespace trainprof::analysis {

using trace::EventKind;

namespace {

// Sweep over kernels: where the summed blocks per SM is above 0, min(sum, 1), each segment handed
// to `segment(begin, end, value)` in time order. An edge is 16 bytes, its sign saying start (+)
// or end (-), room made once: a 1 GB trace's 630,000 edges of 24 bytes, grown by doubling, and
// the segments kept were 32 MB at the run's peak.
template <class OnSegment>
void SmEfficiencySweep(const trace::TraceModel& m, const std::vector<uint32_t>& kernels,
                       OnSegment segment) {
  struct Edge {
    int64_t t;
    float v;  // blocks per SM, negated at the kernel's end
  };
  std::vector<Edge> edges;
  edges.reserve(2 * kernels.size());
  for (uint32_t i : kernels) {
    float b = m.blocks_per_sm_of(i);
    if (!(b > 0)) continue;
    edges.push_back({m.ts_ns[i], b});
    edges.push_back({m.end_ns(i), -b});
  }
  // In time, a start before an end at the same time (tens of thousands of edges: compared one by
  // one, this sort was a fifth of a rank's timeline views). Equal keys keep their order, and the
  // order of those changes nothing: blocks per SM are a kernel's blocks over the SMs (at least
  // 1 / SMs), whose running sum a double holds exactly.
  base::RadixSortBy(edges, [](const Edge& e) { return 2 * e.t + (e.v < 0 ? 1 : 0); });
  double running = 0;
  for (size_t i = 0; i + 1 < edges.size(); ++i) {
    running += edges[i].v;
    if (running < 1e-9) running = 0;
    if (running > 0 && edges[i + 1].t > edges[i].t)
      segment(edges[i].t, edges[i + 1].t, std::min(running, 1.0));
  }
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

// The plugin's utilization curve over the whole trace [begin, end], in buckets of 1 µs times a
// power of ten, at most 100. (Its SM efficiency curve is one point pair a segment of the sweep.)
void AddUtilizationCurve(const Intervals& busy, int64_t begin, int64_t end, GpuSummary& g) {
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
}

}  // namespace

std::vector<GpuSummary> ComputeGpuSummaries(const trace::TraceModel& m, const StepsResult& steps,
                                            bool with_curves) {
  std::map<int64_t, std::vector<uint32_t>> by_device;
  for (size_t i = 0; i < m.size(); ++i)
    if (m.kind[i] == EventKind::kKernel)
      by_device[m.device_of(i)].push_back(static_cast<uint32_t>(i));
  const auto [curve_begin, curve_end] =
      with_curves ? CurveRange(m) : std::pair<int64_t, int64_t>{0, 0};
  std::vector<GpuSummary> out;
  if (steps.steps.empty()) return out;
  const int64_t s_begin = steps.steps.front().begin_ns;
  const int64_t s_end = steps.steps.back().end_ns;
  const double span = static_cast<double>(std::max<int64_t>(s_end - s_begin, 1));
  // Per name: -1 not yet looked at, else bit 0 Tensor Cores, bit 1 a SIMT GEMM.
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
    int64_t tc_ns = 0, simt_ns = 0;
    for (uint32_t i : kernels) {
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
      if (t < 0) t = (UsesTensorCores(m.name_of(i)) ? 1 : 0) | (IsSimtGemm(m.name_of(i)) ? 2 : 0);
      if (t & 1) tc_ns += clipped;
      if (t & 2) simt_ns += clipped;
    }
    busy = Union(std::move(busy));
    g.utilization_pct = 100.0 * static_cast<double>(LengthWithin(busy, s_begin, s_end)) / span;
    if (occ_w > 0) g.occupancy_pct = occ_sum / occ_w;
    if (g.kernel_ns > 0) {
      g.tensor_core_pct = 100.0 * static_cast<double>(tc_ns) / static_cast<double>(g.kernel_ns);
      g.simt_gemm_pct = 100.0 * static_cast<double>(simt_ns) / static_cast<double>(g.kernel_ns);
    }

    double sm_area = 0;
    bool sm_inside = false;
    const bool sm_curve = with_curves && curve_end > curve_begin;  // as AddUtilizationCurve's
    if (sm_curve) g.sm_efficiency_curve = {{curve_begin, 1}, {curve_begin, 0}};
    SmEfficiencySweep(m, kernels, [&](int64_t begin, int64_t end, double value) {
      int64_t lo = std::max(begin, s_begin), hi = std::min(end, s_end);
      if (hi > lo) {
        sm_area += value * static_cast<double>(hi - lo);
        sm_inside = true;
      }
      if (sm_curve)
        g.sm_efficiency_curve.insert(g.sm_efficiency_curve.end(), {{begin, value}, {end, 0}});
    });
    if (sm_inside) g.sm_efficiency_pct = 100.0 * sm_area / span;
    if (with_curves) AddUtilizationCurve(busy, curve_begin, curve_end, g);
    out.push_back(std::move(g));
  }
  return out;
}

}  // namespace trainprof::analysis
