// The Memory view section (memory_view.h): per device the allocated and reserved curve and its
// peak, what was live at the peak, the allocations, and the memory of each operator.
#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "analysis/ranks/detail_store.h"
#include "analysis/sections/sections.h"
#include "memory/roles.h"
#include "snapshot/snapshot_section.h"

namespace trainprof::analysis {

using report::Unit;

namespace {

constexpr size_t kCurvePoints = 2000;  // a curve's points in the report, at most

std::string MemoryDeviceName(int64_t device) {
  return device < 0 ? std::string("CPU") : fmt::format("GPU{}", device);
}

std::string OpName(const MemoryResult& r, uint32_t op) { return r.NameOf(op); }

// The curve, thinned to kCurvePoints by keeping the highest point of each stretch: each point
// appended to `rows` after `prefix` (the rank and device columns of the many-rank table).
void AppendCurve(const DeviceMemory& d, int64_t t0, const std::vector<report::Value>& prefix,
                 std::vector<std::vector<report::Value>>& rows) {
  const std::vector<MemoryPoint>& curve = d.series->curve;
  const size_t stride = (curve.size() + kCurvePoints - 1) / kCurvePoints;
  for (size_t a = 0; a < curve.size(); a += stride) {
    const size_t end = std::min(curve.size(), a + stride);
    size_t top = a;
    for (size_t j = a; j < end; ++j)
      if (curve[j].allocated > curve[top].allocated) top = j;
    const MemoryPoint& p = curve[top];
    std::vector<report::Value> row;
    row.reserve(prefix.size() + 3);  // one allocation a row, not two
    row.insert(row.end(), prefix.begin(), prefix.end());
    row.insert(row.end(),
               {Seconds(p.ts_ns - t0), p.allocated,
                p.reserved == trace::kNone ? report::Value{} : report::Value{p.reserved}});
    rows.push_back(std::move(row));
  }
}

std::vector<report::Column> CurveColumns() {
  return {{"time_s", "Time", Unit::kSeconds},
          {"allocated_bytes", "Allocated", Unit::kBytes},
          {"reserved_bytes", "Reserved", Unit::kBytes}};
}

// One table (and CSV) per rank and device, with its chart.
void AddCurve(report::Section& s, const AnalyzeInput& in, size_t i, const DeviceMemory& d,
              int64_t t0) {
  // One CSV per curve: two files of one rank are told apart by their place in the input.
  int same_rank = 0;
  for (const RankInfo& m : in.ranks) same_rank += m.rank == in.ranks[i].rank;
  const std::string id = fmt::format(
      "memory_curve_r{}{}_{}", in.ranks[i].rank, same_rank > 1 ? fmt::format("_{}", i) : "",
      d.device < 0 ? std::string("cpu") : fmt::format("gpu{}", d.device));
  report::Table& t = s.AddTable(
      id, fmt::format("Memory of {}, rank {}", MemoryDeviceName(d.device), in.RankLabel(i)),
      CurveColumns(), report::TableKind::kSeries);
  AppendCurve(d, t0, {}, t.rows);
  t.charts.push_back({.kind = report::ChartKind::kLines,
                      .label = "time_s",
                      .values = {"allocated_bytes", "reserved_bytes"}});
}

// Many ranks: every rank's and device's curve in one CSV (memory_curves.csv), not a file each.
void AddCurves(report::Section& s, const AnalyzeInput& in) {
  std::vector<report::Column> cols = {{"rank", "Rank", Unit::kText},
                                      {"device", "Device", Unit::kText}};
  for (report::Column& c : CurveColumns()) cols.push_back(std::move(c));
  AddRankTable(s, in, "memory_curves", "Memory over time per rank and device", std::move(cols),
               report::TableKind::kSeries,
               [](const RankAnalysis& a, const std::string& rank,
                  std::vector<std::vector<report::Value>>& rows) {
                 for (const DeviceMemory& d : a.memory.devices)
                   AppendCurve(d, a.memory.t0_ns, {rank, MemoryDeviceName(d.device)}, rows);
               });
}

void AddPeaks(report::Section& s, const AnalyzeInput& in) {
  AddRankSummaryTable(
      s, in, "memory_peaks", "Memory peak per device",
      {{"rank", "Rank", Unit::kText},
       {"device", "Device", Unit::kText},
       {"peak_allocated_bytes", "Peak allocated", Unit::kBytes},
       {"peak_time_s", "At", Unit::kSeconds},
       {"peak_reserved_bytes", "Peak reserved", Unit::kBytes},
       {"events", "Events", Unit::kCount}},
      [](const RankAnalysis& a, const std::string& rank,
         std::vector<std::vector<report::Value>>& rows) {
        for (const DeviceMemory& d : a.memory.devices)
          rows.push_back(
              {rank, MemoryDeviceName(d.device), d.peak_allocated,
               Seconds(d.peak_ts_ns - a.memory.t0_ns),
               d.peak_reserved == trace::kNone ? report::Value{} : report::Value{d.peak_reserved},
               static_cast<int64_t>(d.curve_points)});
      });
}

void AddLiveAtPeak(report::Section& s, const AnalyzeInput& in) {
  report::Table& t =
      AddRankTable(s, in, "memory_live_at_peak", "Live at the peak, by operator",
                   {{"rank", "Rank", Unit::kText},
                    {"device", "Device", Unit::kText},
                    {.key = "operator", .title = "Operator", .terminal_width = 80},
                    {"bytes", "Bytes", Unit::kBytes}},
                   report::TableKind::kTable,
                   [](const RankAnalysis& a, const std::string& rank,
                      std::vector<std::vector<report::Value>>& rows) {
                     for (const DeviceMemory& d : a.memory.devices) {
                       for (const LiveBytes& l : d.series->live_at_peak)
                         rows.push_back(report::MakeRow(rank, MemoryDeviceName(d.device),
                                                        OpName(a.memory, l.op), l.bytes));
                       if (d.live_unknown > 0)
                         rows.push_back(report::MakeRow(rank, MemoryDeviceName(d.device),
                                                        std::string("(allocated before the trace)"),
                                                        d.live_unknown));
                     }
                   });
  if (!in.ManyRanks()) MarkLong(t);
  t.charts.push_back({.kind = report::ChartKind::kBars, .label = "operator", .values = {"bytes"}});
}

void AddAllocations(report::Section& s, const AnalyzeInput& in) {
  report::Table& t = AddRankTable(
      s, in, "memory_allocations", "Allocations",
      {{"rank", "Rank", Unit::kText},
       {"device", "Device", Unit::kText},
       {.key = "operator", .title = "Operator", .terminal_width = 80},
       {"bytes", "Size", Unit::kBytes},
       {"alloc_s", "Allocated at", Unit::kSeconds},
       {"release_s", "Released at", Unit::kSeconds},
       {"lifetime_s", "Lifetime", Unit::kSeconds}},
      report::TableKind::kTable,
      [](const RankAnalysis& an, const std::string& rank,
         std::vector<std::vector<report::Value>>& rows) {
        const int64_t t0 = an.memory.t0_ns;
        for (const Allocation& a : an.memory.lists->allocations) {
          const bool freed = a.free_ns != trace::kNone;
          rows.push_back(report::MakeRow(
              rank, MemoryDeviceName(a.device), OpName(an.memory, a.op), a.bytes,
              Seconds(a.alloc_ns - t0),
              freed ? report::Value{Seconds(a.free_ns - t0)} : report::Value{},
              freed ? report::Value{Seconds(a.free_ns - a.alloc_ns)} : report::Value{}));
        }
      });
  if (!in.ManyRanks()) MarkLong(t);
}

void AddOperators(report::Section& s, const AnalyzeInput& in) {
  report::Table& t = AddRankTable(
      s, in, "memory_operators", "Memory per operator",
      {{"rank", "Rank", Unit::kText},
       {"device", "Device", Unit::kText},
       {.key = "operator", .title = "Operator", .terminal_width = 80},
       {"calls", "Calls", Unit::kCount},
       {"self_allocations", "Allocations", Unit::kCount},
       {"self_alloc_bytes", "Allocated", Unit::kBytes},
       {"self_increase_bytes", "Self increase", Unit::kBytes},
       {"allocations", "Total allocations", Unit::kCount},
       {"alloc_bytes", "Total allocated", Unit::kBytes},
       {"increase_bytes", "Total increase", Unit::kBytes}},
      report::TableKind::kTable,
      [](const RankAnalysis& a, const std::string& rank,
         std::vector<std::vector<report::Value>>& rows) {
        for (const OperatorMemory& o : a.memory.lists->operators)
          rows.push_back(report::MakeRow(rank, MemoryDeviceName(o.device), OpName(a.memory, o.op),
                                         o.calls, o.self_count, o.self_bytes, o.self_increase,
                                         o.total_count, o.total_bytes, o.total_increase));
      });
  if (!in.ManyRanks()) MarkLong(t);
}

// Each device of `a`, index r and bytes of its series' `list` (by role or by rule) not zero.
template <class F>
void ForEachNonZero(const RankAnalysis& a, std::vector<int64_t> DeviceSeries::*list, F f) {
  for (const DeviceMemory& d : a.memory.devices) {
    const std::vector<int64_t>& bytes = (*d.series).*list;
    for (size_t r = 0; r < bytes.size(); ++r)
      if (bytes[r] != 0) f(d, r, bytes[r]);
  }
}

// Memory by role at each device's peak (memory_roles.h), and the rules that decided it.
void AddRoles(report::Section& s, const AnalyzeInput& in) {
  report::Table& t = AddRankTable(
      s, in, "memory_roles", "Live at the peak, by role",
      {{"rank", "Rank", Unit::kText},
       {"device", "Device", Unit::kText},
       {"role", "Role", Unit::kText},
       {"bytes", "Bytes", Unit::kBytes},
       {"share_pct", "Share", Unit::kPercent}},
      report::TableKind::kTable,
      [](const RankAnalysis& a, const std::string& rank,
         std::vector<std::vector<report::Value>>& rows) {
        ForEachNonZero(
            a, &DeviceSeries::role_bytes, [&](const DeviceMemory& d, size_t r, int64_t bytes) {
              rows.push_back(report::MakeRow(rank, MemoryDeviceName(d.device),
                                             memory::RoleName(static_cast<memory::Role>(r)), bytes,
                                             Percent(bytes, d.peak_allocated)));
            });
      });
  AddRankTable(
      s, in, "memory_role_rules", "How the roles at the peak were decided",
      {{"rank", "Rank", Unit::kText},
       {"device", "Device", Unit::kText},
       {.key = "rule", .title = "Rule", .terminal_width = 70},
       {"bytes", "Bytes", Unit::kBytes}},
      report::TableKind::kTable,
      [](const RankAnalysis& a, const std::string& rank,
         std::vector<std::vector<report::Value>>& rows) {
        ForEachNonZero(
            a, &DeviceSeries::rule_bytes, [&](const DeviceMemory& d, size_t r, int64_t bytes) {
              rows.push_back(report::MakeRow(rank, MemoryDeviceName(d.device),
                                             memory::RuleText(static_cast<uint8_t>(r)), bytes));
            });
      });
  std::vector<report::Column> cols = {{"rank", "Rank", Unit::kText},
                                      {"device", "Device", Unit::kText}};
  snapshot::AddRoleTimelineColumns(cols);
  report::Table& tl = AddRankTable(
      s, in, "memory_role_timeline", "Memory by role over time", cols, report::TableKind::kSeries,
      [](const RankAnalysis& a, const std::string& rank,
         std::vector<std::vector<report::Value>>& rows) {
        for (const DeviceMemory& d : a.memory.devices)
          snapshot::AppendRoleTimeline(d.series->role_timeline, 1e9, a.memory.t0_ns,
                                       {rank, MemoryDeviceName(d.device)}, rows);
      });
  size_t timelines = 0;  // one chart for one device's timeline; else the CSV alone
  for (const RankAnalysis& a : in.analyses)
    for (const DeviceMemory& d : a.memory.devices) timelines += d.role_points > 0;
  if (timelines == 1) snapshot::AddRoleTimelineChart(tl);
  t.notes.push_back(
      "Roles from lifetimes and phases (docs/snapshot-analysis.md): made in Optimizer.step and "
      "kept: optimizer state; made inside autograd's evaluate_function ops and kept past the "
      "backward: gradients; made in the forward and kept into the backward: activations; born "
      "and freed in one phase: temporaries; live before the trace: weights (with the optimizer's "
      "state when the trace began after its first step).");
}

// Some rank was read from the legacy autograd profiler's export (its reader counts
// torch_profiler_legacy), which has no memory events to give.
bool LegacyExport(const AnalyzeInput& in) {
  return std::ranges::any_of(in.ranks, [](const RankInfo& r) {
    return std::ranges::any_of(r.diagnostics, [](const base::Diagnostic& d) {
      return d.id == base::DiagnosticId::kTorchProfilerLegacy;
    });
  });
}

}  // namespace

void AddMemorySection(const AnalyzeInput& in, report::Report& r) {
  report::Section& s = r.AddSection("memory", "Memory view");
  int64_t events = 0, unattributed = 0, orphan_frees = 0;
  for (const RankAnalysis& a : in.analyses) {
    events += a.memory.events;
    unattributed += a.memory.unattributed;
    orphan_frees += a.memory.frees_without_alloc;
  }
  if (events == 0) {
    s.notes.push_back(
        LegacyExport(in) ? "No [memory] events: these traces come from torch's legacy profiler "
                           "(torch built without Kineto), whose Chrome-trace export writes "
                           "operators only, with no memory events even when recorded with "
                           "profile_memory=True. For the Memory view, profile with a torch built "
                           "with Kineto, or use trainprof.torch's in-process memory report or a "
                           "memory snapshot (torch.cuda.memory._record_memory_history)."
        : in.FromNsys()  ? "No memory view: an Nsight Systems profile has no PyTorch allocator "
                           "events. Take a torch.profiler trace with profile_memory=True, or a "
                           "memory snapshot (torch.cuda.memory._record_memory_history), for it."
                         : "No [memory] events: record with profile_memory=True to see the "
                           "Memory view.");
    return;
  }
  AddPeaks(s, in);
  if (in.ManyRanks()) {
    AddCurves(s, in);
  } else {
    for (size_t i = 0; i < in.ranks.size(); ++i) {
      const int64_t t0 = in.analyses[i].memory.t0_ns;
      for (const DeviceMemory& d : in.analyses[i].memory.devices) AddCurve(s, in, i, d, t0);
    }
  }
  AddLiveAtPeak(s, in);
  AddRoles(s, in);
  AddOperators(s, in);
  AddAllocations(s, in);
  s.AddMetric("memory_events", "[memory] events", events, Unit::kCount);
  if (unattributed > 0)
    s.notes.push_back(fmt::format(
        "{} of {} memory events happened inside no cpu_op on their thread: they are in the curve "
        "but in no operator's figures.",
        unattributed, events));
  if (orphan_frees > 0)
    s.notes.push_back(fmt::format(
        "{} frees released memory allocated before the trace began (no matching allocation).",
        orphan_frees));
}

}  // namespace trainprof::analysis
