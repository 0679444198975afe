// Holistic Trace Analysis' breakdowns, computed on one rank's TraceModel: temporal (idle /
// compute / non-compute over the GPU's busy span), idle time per stream (host wait / kernel wait
// / other), kernel types and their overlaps with the top kernels of each type,
// communication-computation overlap, and kernel launch statistics.
//
// Two event selections: by default the analysed steps' GPU work at exact nanosecond times; with
// `hta_compat` HTA 0.6.1's own (every CPU event before the last ProfilerStep's start and the GPU
// work correlated with it, times rounded to whole µs as HTA does, HTA's kernel-name rules), so its
// published figures can be reproduced. docs/trace-analysis.md lists each difference and why.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/hta/hta_counters.h"
#include "analysis/hta/hta_events.h"
#include "analysis/kernel_class.h"
#include "analysis/steps.h"
#include "trace/trace_model.h"

namespace trainprof::analysis {

struct Temporal {
  int64_t idle_ns = 0, compute_ns = 0, non_compute_ns = 0, span_ns = 0;  // HTA's "kernel_time"
  double pct(int64_t v) const { return span_ns > 0 ? 100.0 * v / span_ns : 0; }
};

enum IdleCategory { kHostWait, kKernelWait, kIdleOther, kNumIdle };
const char* IdleCategoryName(int c);  // "host_wait", "kernel_wait", "other"

struct StreamIdle {
  int64_t stream = -1;
  std::array<int64_t, kNumIdle> ns{};
  std::array<int64_t, kNumIdle> gaps{};  // number of idle intervals per category
  std::array<bool, kNumIdle> present{};  // HTA lists a category only when some gap fell in it
  // --hta-compat: pandas' describe() of each category's idle intervals (HTA's
  // show_idle_interval_stats), kIntervalStats values per category in IntervalStat's order, ns;
  // NaN where pandas gives NaN (no interval; std of one). Empty without --hta-compat.
  std::vector<double> interval_stats;
};

// The columns of pandas' describe(), in its order.
enum IntervalStat {
  kStatCount,
  kStatMean,
  kStatStd,
  kStatMin,
  kStatQ25,
  kStatQ50,
  kStatQ75,
  kStatMax,
  kIntervalStats
};

struct KernelStats {
  std::string name;  // "others" for the kernels beyond the top ones
  KernelType type = KernelType::kComputation;
  int64_t count = 0, sum_ns = 0, min_ns = 0, max_ns = 0;
  double mean_ns = 0, std_ns = 0;  // sample standard deviation over instances
};

// HTA 0.6.1's fold of the smaller names into "others" (its _aggr_gpu_kernel_time), one function
// (hta_fold.cc) for the kernel breakdown (--hta-compat's top kernels per type) and the drop-in's
// get_gpu_user_annotation_breakdown, so Python does not compute it a second time:
//   HtaFold(std::move(per_name), {.top = 1000, .duration_ratio = 0.8, .allowlist = {"bwd"}});
struct HtaFoldRule {
  size_t top = 10;              // names kept at most (HTA's num_kernels)
  double duration_ratio = 0.8;  // the quantile of the running sums past which names fold
  // A name containing one of these is never folded (HTA's allowlist_patterns).
  std::vector<std::string> allowlist;
};

// `rows`: one per name, with its instances' count, sum, min, max and sample std (NaN for one
// instance). Sorted by sum, largest first (ties by name), each name past `top`, or whose running
// sum is past the duration_ratio quantile of the running sums (pandas' linear quantile), is
// "others" unless allowed. With at most `top` rows nothing folds: the rows come back sorted, each
// with its mean and with std 0 for a NaN. Otherwise the rows come back by name, and each row's
// max, min, mean and std are over the per-name sums it holds, as HTA's second groupby gives them
// (a kept name's max is its sum, its std 0). The type of a row is that of its first member.
std::vector<KernelStats> HtaFold(std::vector<KernelStats> rows, const HtaFoldRule& rule);

struct LaunchStats {
  int64_t launches = 0;               // launch calls matched to the GPU work they started
  int64_t short_kernels = 0;          // GPU time shorter than its launch call, launch <= cutoff
  int64_t runtime_outliers = 0;       // launch calls longer than runtime_cutoff
  int64_t launch_delay_outliers = 0;  // launch delay above launch_delay_cutoff
  double mean_delay_ns = 0, median_delay_ns = 0, p95_delay_ns = 0, max_delay_ns = 0;
  double mean_launch_ns = 0;  // launch call duration
  // CUDA / HIP graphs: one cudaGraphLaunch starts many kernels, which share its correlation id.
  // Such a launch counts once above (its delay: to its first kernel), and here.
  int64_t graph_launches = 0, graph_kernels = 0;
  int64_t graph_gpu_ns = 0;  // GPU time of the graphs' kernels
  int64_t gpu_ns = 0;        // GPU time of all launched work, for the graphs' share
};

struct HtaResult {
  int64_t rank = 0;
  int64_t gpu_events = 0;  // GPU events analysed
  Temporal temporal;
  std::vector<StreamIdle> idle;  // in stream order of first appearance
  // Time by kernel-type combination: "COMPUTATION", "COMPUTATION overlapping COMMUNICATION", ...
  std::vector<std::pair<std::string, int64_t>> kernel_types;
  std::vector<KernelStats> top_kernels;  // per type, sorted by type then sum descending
  double comm_comp_overlap_pct = 0;      // NaN-free: 0 without communication
  bool has_communication = false;
  LaunchStats launch;
  std::vector<StreamQueue> queues;  // queue length per stream, whole trace (hta_counters.h)
};

// Every analysis below on one selection of `m`'s GPU events.
HtaResult ComputeHta(const trace::TraceModel& m, const StepsResult& steps, const HtaOptions& o);

// HTA's analyses, one each, named after HTA's API (get_temporal_breakdown, ...), on the events
// SelectHtaEvents (hta_events.h) chose. None fails: no events give zeros and empty lists.
Temporal TemporalBreakdown(const HtaEvents& e);
std::vector<StreamIdle> IdleTimeBreakdown(const HtaEvents& e, const HtaOptions& o);
// Time by kernel-type combination, longest first.
std::vector<std::pair<std::string, int64_t>> KernelTypeBreakdown(const HtaEvents& e);
// The top kernels of each type by total time, then "others" (get_gpu_kernel_breakdown).
std::vector<KernelStats> GpuKernelBreakdown(const HtaEvents& e, const HtaOptions& o);
// Percent of communication time overlapped by computation; nullopt without communication.
std::optional<double> CommCompOverlap(const HtaEvents& e);
LaunchStats CudaKernelLaunchStats(const HtaEvents& e, const HtaOptions& o);

}  // namespace trainprof::analysis
