// The report of a snapshot: one section per question (overview, timeline, peak, annotations,
// steps and growth, out-of-memory events, the allocator at the end), chart hints set here.
#include "snapshot/snapshot_section.h"

#include <fmt/format.h>

#include <algorithm>

#include "report/format.h"

namespace trainprof::snapshot {

using report::Unit;

namespace {

using detail::Bytes;
using detail::Dev;
using detail::Sec;
using detail::Share;

constexpr size_t kCurvePoints = 1500;  // a curve's points in the report, at most

void AddOverview(report::Section& s, const SnapshotModel& m, const std::vector<DeviceMemory>& ds) {
  report::Table& t = s.AddTable("snapshot_devices", "Memory per device",
                                {{"device", "Device", Unit::kText},
                                 {"events", "Events", Unit::kCount},
                                 {"peak_allocated_bytes", "Peak allocated", Unit::kBytes},
                                 {"peak_time_s", "At", Unit::kSeconds},
                                 {"peak_reserved_bytes", "Peak reserved", Unit::kBytes},
                                 {"end_allocated_bytes", "Allocated at the end", Unit::kBytes},
                                 {"end_reserved_bytes", "Reserved at the end", Unit::kBytes},
                                 {"ooms", "OOMs", Unit::kCount},
                                 {"retries", "Alloc retries", Unit::kCount}});
  for (const DeviceMemory& d : ds) {
    t.rows.push_back({Dev(d.device), d.events, d.peak_allocated, Sec(d.peak_time_us),
                      d.peak_reserved, d.end_allocated, d.end_reserved,
                      static_cast<int64_t>(d.ooms.size()), d.retries});
    if (d.peak_allocated > d.peak_reserved) {
      s.findings.push_back(
          {report::Severity::kWarning,
           fmt::format("{}: the allocated peak ({}) is above the reserved peak ({}), which cannot "
                       "be: blocks lie inside reserved segments. The history lacks segment events "
                       "(recorded without them, or their start was dropped): the reserved figures "
                       "are a lower bound",
                       Dev(d.device), Bytes(d.peak_allocated), Bytes(d.peak_reserved))});
    }
    if (d.starts_late) {
      s.findings.push_back(
          {report::Severity::kWarning,
           fmt::format("{}: the history starts late (recording began mid-run, or PyTorch's ring "
                       "buffer of max_entries events dropped the oldest): {} frees of blocks "
                       "allocated before it; the segments say {} allocated "
                       "and {} reserved at the end, so the curve is raised by {} allocated, "
                       "{} reserved",
                       Dev(d.device), d.unmatched_frees, Bytes(d.end_allocated),
                       Bytes(d.end_reserved), Bytes(d.before_history_allocated),
                       Bytes(d.before_history_reserved))});
    }
  }
  if (m.unknown_actions > 0)
    s.notes.push_back(
        fmt::format("{} trace entries had an action trainprof does not know; "
                    "they were skipped",
                    m.unknown_actions));
  if (!m.has_times && !m.traces.empty())
    s.notes.push_back(
        "The entries carry no time_us: times are the entries' places in the history.");
  s.notes.push_back(fmt::format(
      "Every block and its stack: drag {} onto https://pytorch.org/memory_viz (it runs in the "
      "browser; nothing is uploaded).",
      m.path));
}

void AddTimeline(report::Section& s, const std::vector<DeviceMemory>& ds) {
  report::Table& t = s.AddTable("snapshot_timeline", "Allocated and reserved over time",
                                {{"device", "Device", Unit::kText},
                                 {"time_s", "Time", Unit::kSeconds},
                                 {"allocated_bytes", "Allocated", Unit::kBytes},
                                 {"reserved_bytes", "Reserved", Unit::kBytes}},
                                report::TableKind::kSeries);
  for (const DeviceMemory& d : ds) {
    const size_t n = d.curve.size();
    const size_t stride = std::max<size_t>(1, (n + kCurvePoints - 1) / kCurvePoints);
    for (size_t a = 0; a < n; a += stride) {
      size_t top = a;  // the highest point of each stretch, so the peak is kept
      for (size_t j = a; j < std::min(n, a + stride); ++j)
        if (d.curve[j].allocated > d.curve[top].allocated) top = j;
      const CurvePoint& p = d.curve[top];
      t.rows.push_back({Dev(d.device), Sec(p.time_us), p.allocated, p.reserved});
    }
  }
  t.charts.push_back({.kind = report::ChartKind::kLines,
                      .title = "Allocated and reserved memory (peak marked)",
                      .label = "time_s",
                      .values = {"allocated_bytes", "reserved_bytes"},
                      .split_by = ds.size() > 1 ? "device" : "",
                      .mark_peak = true});
}

void AddPeak(report::Section& s, const std::vector<DeviceMemory>& ds, size_t top) {
  report::Table& t = s.AddTable("snapshot_peak_stacks", "Live at the peak, by call stack",
                                {{"device", "Device", Unit::kText},
                                 {.key = "stack", .title = "Stack", .terminal_width = 90},
                                 {"bytes", "Bytes", Unit::kBytes},
                                 {"blocks", "Blocks", Unit::kCount},
                                 {"share_pct", "Share", Unit::kPercent}});
  report::Table& a = s.AddTable("snapshot_top_allocations", "Largest blocks live at the peak",
                                {{"device", "Device", Unit::kText},
                                 {"size_bytes", "Size", Unit::kBytes},
                                 {"allocated_s", "Allocated at", Unit::kSeconds},
                                 {"address", "Address", Unit::kText},
                                 {.key = "stack", .title = "Stack", .terminal_width = 80}});
  for (const DeviceMemory& d : ds) {
    for (size_t i = 0; i < d.live_at_peak.size() && i < top; ++i) {
      const StackBytes& b = d.live_at_peak[i];
      t.rows.push_back(
          {Dev(d.device), b.stack, b.bytes, b.blocks, Share(b.bytes, d.peak_allocated)});
    }
    for (const Allocation& x : d.top_allocations)
      a.rows.push_back(
          {Dev(d.device), x.size, Sec(x.time_us), fmt::format("0x{:x}", x.addr), x.stack});
    if (!d.live_at_peak.empty()) {
      const StackBytes& b = d.live_at_peak.front();
      s.findings.push_back(
          {report::Severity::kInfo,
           fmt::format("{}: peak {} allocated at {:.3f} s; the largest share is {} ({:.1f} %) "
                       "from {}",
                       Dev(d.device), Bytes(d.peak_allocated), Sec(d.peak_time_us), Bytes(b.bytes),
                       Share(b.bytes, d.peak_allocated), b.stack)});
    }
  }
  t.charts.push_back({.kind = report::ChartKind::kBars,
                      .title = "Live at the peak by stack",
                      .label = "stack",
                      .values = {"bytes"},
                      .limit = top});
}

void AddPhases(report::Section& s, const std::vector<DeviceMemory>& ds) {
  report::Table& t = s.AddTable("snapshot_annotations", "Memory per annotation",
                                {{"device", "Device", Unit::kText},
                                 {.key = "annotation", .title = "Annotation", .terminal_width = 60},
                                 {"instances", "Instances", Unit::kCount},
                                 {"allocated_bytes", "Allocated in it", Unit::kBytes},
                                 {"net_bytes", "Net change", Unit::kBytes},
                                 {"peak_bytes", "Peak in it", Unit::kBytes}});
  for (const DeviceMemory& d : ds)
    for (const PhaseMemory& p : d.phases)
      t.rows.push_back(
          {Dev(d.device), p.name, p.instances, p.allocated_bytes, p.net_bytes, p.peak});
  if (t.rows.empty())
    t.notes.push_back(
        "No annotations: record_function ranges reach the snapshot when memory history is "
        "recorded with PyTorch 2.4 or later (external_annotations).");
}

}  // namespace

void AddSnapshotSections(const SnapshotModel& m, const std::vector<DeviceMemory>& ds,
                         const SnapshotOptions& o, report::Report& r) {
  AddOverview(r.AddSection("snapshot", fmt::format("GPU memory snapshot: {}", m.path)), m, ds);
  AddTimeline(r.AddSection("snapshot_timeline", "Memory over time"), ds);
  AddPeak(r.AddSection("snapshot_peak", "The peak"), ds, o.top);
  AddRoleSections(r.AddSection("snapshot_roles", "Memory by role"), ds);
  AddPhases(r.AddSection("snapshot_annotations", "Memory per annotation"), ds);
  AddStepSections(r.AddSection("snapshot_steps", "Memory per step and growth"), ds, o.top);
  AddOomSection(r.AddSection("snapshot_oom", "Out of memory"), ds);
  AddAllocatorSection(r.AddSection("snapshot_allocator", "The allocator at the end"), ds);
}

}  // namespace trainprof::snapshot
