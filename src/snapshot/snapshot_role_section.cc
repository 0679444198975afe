// The snapshot's memory by role: what the peak is made of (weights, gradients, optimizer state,
// activations, temporaries), how each figure was decided, the phases found, the timeline by role,
// and the answers a user acts on, each with its figures.
#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "snapshot/snapshot_section.h"

namespace trainprof::snapshot {

using detail::Bytes;
using detail::Dev;
using detail::Sec;
using detail::Share;
using memory::Role;
using report::Unit;

namespace {

std::string ColumnOf(Role r) {
  std::string key = memory::RoleName(r);
  std::replace(key.begin(), key.end(), ' ', '_');
  return key + "_bytes";
}

void AddPeakRoles(report::Section& s, const std::vector<DeviceMemory>& ds) {
  report::Table& t = s.AddTable("snapshot_roles", "Live at the peak, by role",
                                {{"device", "Device", Unit::kText},
                                 {"role", "Role", Unit::kText},
                                 {"bytes", "Bytes", Unit::kBytes},
                                 {"share_pct", "Share", Unit::kPercent},
                                 {.key = "stack", .title = "Largest stack", .terminal_width = 70}});
  report::Table& why = s.AddTable("snapshot_role_rules", "How the roles at the peak were decided",
                                  {{"device", "Device", Unit::kText},
                                   {.key = "rule", .title = "Rule", .terminal_width = 70},
                                   {"bytes", "Bytes", Unit::kBytes},
                                   {"share_pct", "Share", Unit::kPercent}});
  for (const DeviceMemory& d : ds) {
    if (!d.roles.inferred || d.peak_allocated <= 0) continue;
    std::vector<Role> roles;
    for (int r = 0; r < memory::kRoles; ++r)
      if (d.roles.At(static_cast<Role>(r)) != 0) roles.push_back(static_cast<Role>(r));
    std::ranges::stable_sort(roles, [&](Role a, Role b) { return d.roles.At(a) > d.roles.At(b); });
    for (Role role : roles)
      t.rows.push_back({Dev(d.device), memory::RoleName(role), d.roles.At(role),
                        Share(d.roles.At(role), d.peak_allocated), d.roles.LargestStack(role)});
    for (const auto& [rule, bytes] : d.roles.rules)
      why.rows.push_back(
          {Dev(d.device), memory::RuleText(rule), bytes, Share(bytes, d.peak_allocated)});
  }
  t.charts.push_back({.kind = report::ChartKind::kBars,
                      .title = "Live at the peak by role",
                      .label = "role",
                      .values = {"bytes"},
                      .limit = 0});
  const bool inferred = std::ranges::any_of(ds, [](const DeviceMemory& d) {
    return std::ranges::any_of(d.roles.rules, [](const auto& r) {
      return r.first != memory::kTorchCategory && r.first != memory::kExact;
    });
  });
  if (inferred)
    t.notes.push_back(
        "Roles are inferred from lifetimes, phases and frames (docs/snapshot-analysis.md): "
        "resident before the history: weights; made in the optimizer's step and kept: optimizer "
        "state; made on autograd's thread and kept past the backward: gradients; made in the "
        "forward and kept into the backward: activations; born and freed in one phase: "
        "temporaries.");
}

void AddRoleTimeline(report::Section& s, const std::vector<DeviceMemory>& ds) {
  std::vector<report::Column> cols = {{"device", "Device", Unit::kText}};
  AddRoleTimelineColumns(cols);
  report::Table& t = s.AddTable("snapshot_role_timeline", "Memory by role over time", cols,
                                report::TableKind::kSeries);
  report::Table& p = s.AddTable("snapshot_phases", "The step's phases, as found",
                                {{"device", "Device", Unit::kText},
                                 {"phase", "Phase", Unit::kText},
                                 {"start_s", "Start", Unit::kSeconds},
                                 {"end_s", "End", Unit::kSeconds}});
  for (const DeviceMemory& d : ds) {
    AppendRoleTimeline(d.roles.timeline, 1e6, 0, {Dev(d.device)}, t.rows);
    for (const memory::PhaseSpan& ph : d.roles.phases)
      p.rows.push_back({Dev(d.device), memory::PhaseName(ph.phase), Sec(ph.start), Sec(ph.end)});
  }
  if (p.rows.empty())
    p.notes.push_back("No phases: the source gives roles without them, or made no allocations.");
  AddRoleTimelineChart(t);
}

}  // namespace

void AddRoleTimelineColumns(std::vector<report::Column>& cols) {
  cols.push_back({"time_s", "Time", Unit::kSeconds});
  for (int r = 0; r < memory::kRoles; ++r) {
    const Role role = static_cast<Role>(r);
    cols.push_back({ColumnOf(role), memory::RoleName(role), Unit::kBytes});
  }
  cols.push_back({"mark", "Mark", Unit::kText});
}

void AppendRoleTimeline(const std::vector<memory::RolePoint>& tl, double ticks_per_second,
                        int64_t t0, const std::vector<report::Value>& prefix,
                        std::vector<std::vector<report::Value>>& rows) {
  auto sum = [](const memory::RolePoint& x) {
    return std::accumulate(x.bytes.begin(), x.bytes.end(), int64_t{0});
  };
  const auto top = std::ranges::max_element(tl, {}, sum);
  for (auto it = tl.begin(); it != tl.end(); ++it) {
    std::vector<report::Value> row;
    row.reserve(prefix.size() + it->bytes.size() + 2);  // one allocation a row, not four
    row.insert(row.end(), prefix.begin(), prefix.end());
    row.push_back(static_cast<double>(it->time - t0) / ticks_per_second);
    for (int64_t b : it->bytes) row.push_back(b);
    row.push_back(it == top ? "peak" : "");
    rows.push_back(std::move(row));
  }
}

void AddRoleTimelineChart(report::Table& t) {
  std::vector<std::string> values;
  for (int r = 0; r < memory::kRoles; ++r) values.push_back(ColumnOf(static_cast<Role>(r)));
  t.charts.push_back({.kind = report::ChartKind::kBars,
                      .title = "Memory by role over time (peak in red)",
                      .label = "time_s",
                      .values = values,
                      .limit = 0,
                      .horizontal = false,
                      .highlight_key = "mark",
                      .highlight_value = "peak"});
}

void AddRoleSections(report::Section& s, const std::vector<DeviceMemory>& ds) {
  AddPeakRoles(s, ds);
  AddRoleTimeline(s, ds);
  for (const DeviceMemory& d : ds)
    for (std::string& f : RoleAdvice(d)) s.findings.push_back({report::Severity::kInfo, f});
}

}  // namespace trainprof::snapshot
