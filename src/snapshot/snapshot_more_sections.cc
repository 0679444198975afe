// The report's step, growth, out-of-memory and allocator sections, and the diff of two snapshots.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <map>

#include "snapshot/snapshot_section.h"

namespace trainprof::snapshot {

using detail::Bytes;
using detail::Dev;
using detail::Sec;
using report::Unit;

constexpr size_t kTerminalSteps = 30;  // more steps go to the files only

void AddStepSections(report::Section& s, const std::vector<DeviceMemory>& ds, size_t top) {
  report::Table& t = s.AddTable("snapshot_steps", "Memory per step",
                                {{"device", "Device", Unit::kText},
                                 {"step", "Step", Unit::kText},
                                 {"start_s", "Start", Unit::kSeconds},
                                 {"allocated_start_bytes", "Allocated at start", Unit::kBytes},
                                 {"allocated_end_bytes", "At end", Unit::kBytes},
                                 {"peak_bytes", "Peak", Unit::kBytes},
                                 {"left_bytes", "Left for later", Unit::kBytes}});
  report::Table& g =
      s.AddTable("snapshot_growth", "What steps left allocated that the next step did not free",
                 {{"device", "Device", Unit::kText},
                  {.key = "stack", .title = "Stack", .terminal_width = 90},
                  {"bytes", "Bytes", Unit::kBytes},
                  {"blocks", "Blocks", Unit::kCount},
                  {"steps", "Steps", Unit::kCount}});
  for (const DeviceMemory& d : ds) {
    for (const StepMemory& st : d.steps)
      t.rows.push_back({Dev(d.device), st.name, Sec(st.start_us), st.allocated_start,
                        st.allocated_end, st.peak,
                        st.left_bytes < 0 ? report::Value{} : report::Value{st.left_bytes}});
    const int64_t judged = std::max<int64_t>(0, static_cast<int64_t>(d.steps.size()) - 1);
    for (size_t i = 0; i < d.growth.size() && i < top; ++i) {
      const StackBytes& b = d.growth[i];
      g.rows.push_back({Dev(d.device), b.stack, b.bytes, b.blocks, b.steps});
      if (judged >= 2 && b.steps * 2 >= judged + 1 && b.steps >= 2) {
        s.findings.push_back(
            {report::Severity::kWarning,
             fmt::format("{}: memory grows: {} of {} steps left {} per step on average "
                         "allocated past the next step, from {}",
                         Dev(d.device), b.steps, judged, Bytes(b.bytes / b.steps), b.stack)});
      }
    }
  }
  if (t.rows.size() > kTerminalSteps) {
    t.kind = report::TableKind::kDetail;
    t.notes.push_back(
        fmt::format("{} steps: in snapshot_steps.csv, report.json and report.html", t.rows.size()));
  }
  if (t.rows.empty())
    t.notes.push_back(
        "No steps: steps are annotations named ProfilerStep#N (torch.profiler), step N or "
        "train_step_N.");
  t.charts.push_back({.kind = report::ChartKind::kBars,
                      .title = "Peak per step",
                      .label = "step",
                      .values = {"peak_bytes"},
                      .limit = 0,
                      .horizontal = false});
}

namespace {

// Why the request failed, when the figures say: fragmentation, or a request larger than all the
// device had free (often a wrong size).
std::string OomCause(const OomEvent& o) {
  const int64_t cached = o.reserved - o.allocated;
  if (cached >= o.requested && o.largest_free < o.requested)
    return fmt::format(
        ": fragmentation: {} free in cached segments, but the largest free block "
        "is {} (try PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True)",
        Bytes(cached), Bytes(o.largest_free));
  if (o.device_free > 0 && o.requested > o.device_free + cached)
    return fmt::format(
        ": the request is larger than all the device had free ({} on the device, "
        "{} cached), so no setting helps: check the tensor's size",
        Bytes(o.device_free), Bytes(cached));
  return "";
}

}  // namespace

void AddOomSection(report::Section& s, const std::vector<DeviceMemory>& ds) {
  report::Table& t = s.AddTable("snapshot_ooms", "Out-of-memory events",
                                {{"device", "Device", Unit::kText},
                                 {"time_s", "At", Unit::kSeconds},
                                 {"requested_bytes", "Requested", Unit::kBytes},
                                 {"allocated_bytes", "Allocated", Unit::kBytes},
                                 {"reserved_bytes", "Reserved", Unit::kBytes},
                                 {"free_in_reserved_bytes", "Free in reserved", Unit::kBytes},
                                 {"largest_free_bytes", "Largest free block", Unit::kBytes},
                                 {"device_free_bytes", "Free on device", Unit::kBytes},
                                 {.key = "stack", .title = "Stack", .terminal_width = 70}});
  for (const DeviceMemory& d : ds) {
    for (const OomEvent& o : d.ooms) {
      const int64_t cached = o.reserved - o.allocated;
      t.rows.push_back({Dev(d.device), Sec(o.time_us), o.requested, o.allocated, o.reserved, cached,
                        o.largest_free, o.device_free, o.stack});
      s.findings.push_back(
          {report::Severity::kError,
           fmt::format("{}: out of memory at {:.3f} s asking for {} with {} allocated of {} "
                       "reserved{}, from {}",
                       Dev(d.device), Sec(o.time_us), Bytes(o.requested), Bytes(o.allocated),
                       Bytes(o.reserved), OomCause(o), o.stack)});
    }
    if (d.retries > 0)
      s.notes.push_back(
          fmt::format("{}: {} allocator retries (cached segments freed, then "
                      "cudaMalloc called again): each one synchronises the device",
                      Dev(d.device), d.retries));
  }
  if (t.rows.empty()) t.notes.push_back("No out-of-memory event in the history.");
}

void AddAllocatorSection(report::Section& s, const std::vector<DeviceMemory>& ds) {
  report::Table& t = s.AddTable("snapshot_pools", "Segments at the end, by pool",
                                {{"device", "Device", Unit::kText},
                                 {"pool", "Pool", Unit::kText},
                                 {"segments", "Segments", Unit::kCount},
                                 {"expandable", "Expandable", Unit::kCount},
                                 {"reserved_bytes", "Reserved", Unit::kBytes},
                                 {"allocated_bytes", "Allocated", Unit::kBytes},
                                 {"inactive_split_blocks", "Inactive split blocks", Unit::kCount},
                                 {"inactive_split_bytes", "In them", Unit::kBytes},
                                 {"largest_inactive_bytes", "Largest inactive", Unit::kBytes}});
  for (const DeviceMemory& d : ds)
    for (const PoolState& p : d.pools)
      t.rows.push_back({Dev(d.device), p.pool, p.segments, p.expandable, p.reserved, p.allocated,
                        p.inactive_split_blocks, p.inactive_split_bytes, p.largest_inactive});
  t.notes.push_back(
      "Inactive split blocks are free pieces of partly used segments: memory reserved that "
      "only requests that fit them can use.");
}

std::string RoleMoves(const std::vector<int64_t>& a, const std::vector<int64_t>& b, int64_t scale) {
  std::vector<std::pair<int64_t, int>> moved;
  for (int r = 0; r < memory::kRoles; ++r) moved.push_back({b[r] - a[r], r});
  std::stable_sort(moved.begin(), moved.end(), [](const auto& x, const auto& y) {
    return std::llabs(x.first) > std::llabs(y.first);
  });
  const int64_t largest = std::llabs(moved.front().first);
  if (largest == 0 || largest * 100 < scale) return "";
  std::string out;
  for (const auto& [delta, r] : moved) {
    if (std::llabs(delta) * 10 < largest) break;
    out += fmt::format("{}{} {}{}", out.empty() ? "" : ", ",
                       memory::RoleName(static_cast<memory::Role>(r)), delta < 0 ? "-" : "+",
                       Bytes(std::llabs(delta)));
  }
  return out;
}

namespace {

// Per device: bytes by role at each side's peak, and the roles that moved as a finding.
void AddRoleDiff(const std::map<int64_t, std::pair<const DeviceMemory*, const DeviceMemory*>>& by,
                 report::Section& s) {
  report::Table* t = nullptr;
  for (const auto& [dev, pair] : by) {
    const auto [da, db] = pair;
    if (!da || !db || !da->roles.inferred || !db->roles.inferred) continue;
    if (t == nullptr)
      t = &s.AddTable("snapshot_diff_roles", "Memory by role at the peak",
                      {{"device", "Device", Unit::kText},
                       {"role", "Role", Unit::kText},
                       {"a_bytes", "A", Unit::kBytes},
                       {"b_bytes", "B", Unit::kBytes},
                       {"change_bytes", "Change", Unit::kBytes}});
    std::vector<int64_t> ra, rb;
    for (int r = 0; r < memory::kRoles; ++r) {
      const auto role = static_cast<memory::Role>(r);
      ra.push_back(da->roles.At(role));
      rb.push_back(db->roles.At(role));
      if (ra.back() != 0 || rb.back() != 0)
        t->rows.push_back(
            {Dev(dev), memory::RoleName(role), ra.back(), rb.back(), rb.back() - ra.back()});
    }
    const std::string moves = RoleMoves(ra, rb, std::max(da->peak_allocated, db->peak_allocated));
    s.findings.push_back({report::Severity::kInfo,
                          moves.empty() ? Dev(dev) + ": no role moved by 1 % of the peak or more"
                                        : fmt::format("{}: by role, {}", Dev(dev), moves)});
  }
}

}  // namespace

void AddSnapshotDiffSections(const std::string& a_name, const std::vector<DeviceMemory>& a,
                             const std::string& b_name, const std::vector<DeviceMemory>& b,
                             size_t top, report::Report& r) {
  report::Section& s = r.AddSection("snapshot_diff", fmt::format("{} vs {}", a_name, b_name));
  report::Table& p = s.AddTable("snapshot_diff_peak", "Peak per device",
                                {{"device", "Device", Unit::kText},
                                 {"a_peak_bytes", "A peak", Unit::kBytes},
                                 {"b_peak_bytes", "B peak", Unit::kBytes},
                                 {"change_bytes", "Change", Unit::kBytes},
                                 {"a_reserved_bytes", "A reserved", Unit::kBytes},
                                 {"b_reserved_bytes", "B reserved", Unit::kBytes}});
  report::Table& t =
      s.AddTable("snapshot_diff_stacks", "Live at the peak: stacks that changed most",
                 {{"device", "Device", Unit::kText},
                  {.key = "stack", .title = "Stack", .terminal_width = 80},
                  {"a_bytes", "A", Unit::kBytes},
                  {"b_bytes", "B", Unit::kBytes},
                  {"change_bytes", "Change", Unit::kBytes}});
  std::map<int64_t, std::pair<const DeviceMemory*, const DeviceMemory*>> by;
  for (const DeviceMemory& d : a) by[d.device].first = &d;
  for (const DeviceMemory& d : b) by[d.device].second = &d;
  for (const auto& [dev, pair] : by) {
    const DeviceMemory* da = pair.first;
    const DeviceMemory* db = pair.second;
    const int64_t pa = da ? da->peak_allocated : 0, pb = db ? db->peak_allocated : 0;
    p.rows.push_back(
        {Dev(dev), pa, pb, pb - pa, da ? da->peak_reserved : 0, db ? db->peak_reserved : 0});
    std::map<std::string, std::pair<int64_t, int64_t>> stacks;
    if (da)
      for (const StackBytes& x : da->live_at_peak) stacks[x.stack].first += x.bytes;
    if (db)
      for (const StackBytes& x : db->live_at_peak) stacks[x.stack].second += x.bytes;
    std::vector<std::pair<std::string, std::pair<int64_t, int64_t>>> rows(stacks.begin(),
                                                                          stacks.end());
    std::stable_sort(rows.begin(), rows.end(), [](const auto& x, const auto& y) {
      return std::llabs(x.second.second - x.second.first) >
             std::llabs(y.second.second - y.second.first);
    });
    for (size_t i = 0; i < rows.size() && i < top; ++i) {
      if (rows[i].second.first == rows[i].second.second) break;
      t.rows.push_back({Dev(dev), rows[i].first, rows[i].second.first, rows[i].second.second,
                        rows[i].second.second - rows[i].second.first});
    }
    s.findings.push_back({report::Severity::kInfo,
                          fmt::format("{}: peak {} -> {} ({}{})", Dev(dev), Bytes(pa), Bytes(pb),
                                      pb >= pa ? "+" : "-", Bytes(std::llabs(pb - pa)))});
  }
  AddRoleDiff(by, s);
}

}  // namespace trainprof::snapshot
