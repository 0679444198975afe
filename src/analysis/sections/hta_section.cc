// The "HTA breakdowns" section: one table per HTA analysis (hta.h), one function each, in the
// order of the list in AddHtaSection.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "analysis/ranks/detail_store.h"
#include "analysis/sections/sections.h"

namespace trainprof::analysis {

using report::Unit;
using report::Value;

namespace {

using AddTableFn = void (*)(const AnalyzeInput& in, report::Section& s);

void TemporalBreakdownTable(const AnalyzeInput& in, report::Section& s) {
  AddRankTablesTable(
      s, in, "temporal_breakdown", "Temporal breakdown (GPU busy span)",
      {{"rank", "Rank", Unit::kText},
       {"idle_s", "Idle", Unit::kSeconds},
       {"compute_s", "Compute", Unit::kSeconds},
       {"non_compute_s", "Non-compute", Unit::kSeconds},
       {"kernel_span_s", "Kernel span", Unit::kSeconds},
       {"idle_pct", "Idle %", Unit::kPercent},
       {"compute_pct", "Compute %", Unit::kPercent},
       {"non_compute_pct", "Non-compute %", Unit::kPercent}},
      [](const RankTables& tables, const std::string& rank, std::vector<std::vector<Value>>& rows) {
        const Temporal& t = tables.hta.temporal;
        rows.push_back({rank, Seconds(t.idle_ns), Seconds(t.compute_ns), Seconds(t.non_compute_ns),
                        Seconds(t.span_ns), t.pct(t.idle_ns), t.pct(t.compute_ns),
                        t.pct(t.non_compute_ns)});
      });
}

void IdleTimeBreakdownTable(const AnalyzeInput& in, report::Section& sec) {
  report::Table& it = AddRankTablesTable(
      sec, in, "idle_time_breakdown", "Idle time per stream",
      {{"rank", "Rank", Unit::kText},
       {"stream", "Stream", Unit::kCount},
       {"host_wait_s", "Host wait", Unit::kSeconds},
       {"kernel_wait_s", "Kernel wait", Unit::kSeconds},
       {"other_s", "Other", Unit::kSeconds},
       {"host_wait_pct", "Host wait %", Unit::kPercent},
       {"idle_intervals", "Idle intervals", Unit::kCount}},
      [](const RankTables& t, const std::string& rank, std::vector<std::vector<Value>>& rows) {
        std::vector<StreamIdle> idle = t.hta.idle;
        std::sort(idle.begin(), idle.end(),
                  [](const StreamIdle& x, const StreamIdle& y) { return x.stream < y.stream; });
        for (const StreamIdle& s : idle) {
          int64_t sum = s.ns[0] + s.ns[1] + s.ns[2];
          rows.push_back({rank, s.stream, Seconds(s.ns[kHostWait]), Seconds(s.ns[kKernelWait]),
                          Seconds(s.ns[kIdleOther]), sum > 0 ? 100.0 * s.ns[kHostWait] / sum : 0.0,
                          s.gaps[0] + s.gaps[1] + s.gaps[2]});
        }
      });
  if (!it.rows.empty() && it.rows.size() <= 64) {  // beyond that, a bar per stream is unreadable
    it.charts.push_back({.kind = report::ChartKind::kBars,
                         .title = "GPU idle time per rank and stream",
                         .values = {"host_wait_s", "kernel_wait_s", "other_s"},
                         .limit = 0,
                         .label_format = "rank {rank} stream {stream}"});
  }
  it.notes.push_back(fmt::format(
      "Host wait: the GPU was free before the CPU launched the next kernel. Kernel wait: a gap "
      "under {} µs between back-to-back kernels.",
      in.options.hta.consecutive_kernel_delay_ns / 1000));
}

void CommCompOverlapTable(const AnalyzeInput& in, report::Section& s) {
  AddRankTablesTable(
      s, in, "comm_comp_overlap", "Communication-computation overlap",
      {{"rank", "Rank", Unit::kText},
       {"overlap_pct", "Comm. time overlapped by compute", Unit::kPercent}},
      [](const RankTables& t, const std::string& rank, std::vector<std::vector<Value>>& rows) {
        if (t.hta.has_communication) rows.push_back({rank, t.hta.comm_comp_overlap_pct});
      });
  if (!AnyRankTables(in, [](const RankTables& t) { return t.hta.has_communication; }))
    s.notes.push_back("No communication kernels: no overlap to measure.");
}

void CudaKernelLaunchStatsTable(const AnalyzeInput& in, report::Section& s) {
  report::Table& lt = AddRankTablesTable(
      s, in, "kernel_launch_stats", "Kernel launch statistics",
      {{"rank", "Rank", Unit::kText},
       {"launches", "Launches", Unit::kCount},
       {"short_kernels", "Short kernels", Unit::kCount},
       {"runtime_outliers", "Runtime outliers", Unit::kCount},
       {"launch_delay_outliers", "Delay outliers", Unit::kCount},
       {"mean_launch_s", "Mean launch", Unit::kSeconds},
       {"median_delay_s", "Median delay", Unit::kSeconds},
       {"p95_delay_s", "p95 delay", Unit::kSeconds}},
      [](const RankTables& t, const std::string& rank, std::vector<std::vector<Value>>& rows) {
        const LaunchStats& l = t.hta.launch;
        rows.push_back({rank, l.launches, l.short_kernels, l.runtime_outliers,
                        l.launch_delay_outliers, Seconds(l.mean_launch_ns),
                        Seconds(l.median_delay_ns), Seconds(l.p95_delay_ns)});
      });
  RankTables scratch;
  AddRankNotes(lt.notes, in, [&](size_t i) {
    const LaunchStats& l = in.TablesAt(i, scratch).hta.launch;
    if (l.graph_launches == 0) return std::string();
    return fmt::format(
        "Rank {}: {} CUDA/HIP graph launch{} started {} kernels ({:.1f}% of the launched GPU "
        "time); each graph launch counts once, its delay to its first kernel.",
        kRankMark, l.graph_launches, l.graph_launches == 1 ? "" : "es", l.graph_kernels,
        l.gpu_ns > 0 ? 100.0 * static_cast<double>(l.graph_gpu_ns) / l.gpu_ns : 0.0);
  });
  const HtaOptions& o = in.options.hta;
  lt.notes.push_back(fmt::format(
      "Short: GPU time under the launch call's time (calls <= {} µs). Runtime outliers: calls "
      "over {} µs. Delay: launch call end to GPU start; outliers over {} µs.",
      o.runtime_cutoff_ns / 1000, o.runtime_cutoff_ns / 1000, o.launch_delay_cutoff_ns / 1000));
}

void KernelTypeBreakdownTable(const AnalyzeInput& in, report::Section& s) {
  std::map<std::string, int64_t> types;
  ForEachRankTables(in, [&](size_t, const RankTables& t) {
    for (const auto& [label, ns] : t.hta.kernel_types) types[label] += ns;
  });
  report::Table& kt = s.AddTable("kernel_type_breakdown", "Kernel type breakdown (all ranks)",
                                 {{"kernel_type", "Kernel type", Unit::kText},
                                  {"time_s", "Time", Unit::kSeconds},
                                  {"pct", "Share", Unit::kPercent}});
  kt.charts.push_back({.kind = report::ChartKind::kBars,
                       .title = "GPU time by kernel type",
                       .label = "kernel_type",
                       .values = {"time_s"}});
  int64_t type_sum = 0;
  for (const auto& [label, ns] : types) type_sum += ns;
  std::vector<std::pair<std::string, int64_t>> sorted(types.begin(), types.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  for (const auto& [label, ns] : sorted)
    kt.rows.push_back({label, Seconds(ns), type_sum > 0 ? 100.0 * ns / type_sum : 0.0});
}

void GpuKernelBreakdownTable(const AnalyzeInput& in, report::Section& s) {
  report::Table& top = AddRankTable(
      s, in, "top_kernels", "Top kernels per type",
      {{"rank", "Rank", Unit::kText},
       {"kernel_type", "Type", Unit::kText},
       {"name", "Kernel", Unit::kText, true, false, 90},
       {"count", "Count", Unit::kCount},
       {"sum_s", "Total", Unit::kSeconds},
       {"mean_s", "Mean", Unit::kSeconds},
       {"min_s", "Min", Unit::kSeconds},
       {"max_s", "Max", Unit::kSeconds},
       {"std_s", "Std dev", Unit::kSeconds}},
      report::TableKind::kTable,
      [](const RankAnalysis& a, const std::string& rank, std::vector<std::vector<Value>>& rows) {
        for (const KernelStats& k : a.tables->hta.top_kernels)
          rows.push_back(report::MakeRow(rank, std::string(KernelTypeName(k.type)), k.name, k.count,
                                         Seconds(k.sum_ns), Seconds(k.mean_ns), Seconds(k.min_ns),
                                         Seconds(k.max_ns), Seconds(k.std_ns)));
      });
  if (top.rows.size() > 40) top.kind = report::TableKind::kDetail;
}

void QueueLengthSummaryTable(const AnalyzeInput& in, report::Section& s) {
  report::Table& t = AddRankTablesTable(
      s, in, "queue_length", "Queue length per stream (whole trace)",
      {{"rank", "Rank", Unit::kText},
       {"stream", "Stream", Unit::kCount},
       {"max", "Max", Unit::kCount},
       {"mean", "Mean (HTA)", Unit::kNumber},
       {"time_mean", "Mean over time", Unit::kNumber},
       {"blocked_s", "Blocked on full queue", Unit::kSeconds},
       {"blocked_pct", "Blocked %", Unit::kPercent}},
      [](const RankTables& t, const std::string& rank, std::vector<std::vector<Value>>& rows) {
        for (const StreamQueue& q : t.hta.queues)
          rows.push_back({rank, q.stream, q.max_length, q.mean_length, q.time_mean_length,
                          Seconds(q.blocked_ns),
                          q.span_ns > 0 ? 100.0 * q.blocked_ns / q.span_ns : 0.0});
      });
  t.notes.push_back(fmt::format(
      "Outstanding operations: +1 at the launch call, -1 when the work starts on the GPU. "
      "Blocked: {} or more outstanding, when a further launch waits. Mean (HTA): over the "
      "points where the length changed. Memcpy bandwidth per direction is in its own "
      "section (HTA's get_memory_bw_summary).",
      kFullQueue));
}

}  // namespace

void AddHtaSection(const AnalyzeInput& in, report::Report& r) {
  static constexpr AddTableFn kTables[] = {
      TemporalBreakdownTable,     IdleTimeBreakdownTable,   CommCompOverlapTable,
      CudaKernelLaunchStatsTable, KernelTypeBreakdownTable, GpuKernelBreakdownTable,
      QueueLengthSummaryTable,
  };
  report::Section& s = r.AddSection("hta", "HTA breakdowns");
  for (AddTableFn add : kTables) add(in, s);
}

}  // namespace trainprof::analysis
