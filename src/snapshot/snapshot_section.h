// A snapshot's analysis as report sections, and the diff of two snapshots.
//
//   report::Report r;
//   AddSnapshotSections(model, AnalyzeSnapshot(model, o), o, r);
//   AddSnapshotDiffSections(a_name, a, b_name, b, 10, r);
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "report/format.h"
#include "report/report.h"
#include "snapshot/snapshot_analysis.h"

namespace trainprof::snapshot {

void AddSnapshotSections(const SnapshotModel& m, const std::vector<DeviceMemory>& devices,
                         const SnapshotOptions& o, report::Report& r);

// The peak's change per device (matched by device index) and the stacks whose live-at-peak
// bytes changed most, `top` of them.
void AddSnapshotDiffSections(const std::string& a_name, const std::vector<DeviceMemory>& a,
                             const std::string& b_name, const std::vector<DeviceMemory>& b,
                             size_t top, report::Report& r);

// The sections' parts (snapshot_section.cc, snapshot_sections2.cc).
void AddStepSections(report::Section& s, const std::vector<DeviceMemory>& ds, size_t top);
void AddOomSection(report::Section& s, const std::vector<DeviceMemory>& ds);
void AddAllocatorSection(report::Section& s, const std::vector<DeviceMemory>& ds);
void AddRoleSections(report::Section& s, const std::vector<DeviceMemory>& ds);
// The answers memory by role gives a user, each with its figures (snapshot_role_advice.cc).
std::vector<std::string> RoleAdvice(const DeviceMemory& d);
// Two of them from bare figures, for every source of roles (the in-process one too):
// "optimizer state is 2.0x the weights <when> (...)" with what 8-bit or sharded state would
// hold, and "<bytes> of gradients are still live when the next forward begins: ...".
std::string OptimizerStateAnswer(int64_t state, int64_t weights, std::string_view when);
std::string GradientsKeptAnswer(int64_t bytes);
// "activation +6.00 GiB, gradient -1.00 GiB": the roles whose bytes (by memory::Role) moved from
// `a` to `b` by a tenth of the largest move or more, largest first; "" when no role moved by
// 1 % of `scale` (the larger peak). For every diff by role (analysis/diff_by_role.cc too).
std::string RoleMoves(const std::vector<int64_t>& a, const std::vector<int64_t>& b, int64_t scale);
// A timeline by role as a table for every source (the Memory view's too): after the caller's own
// columns, time_s, one "<role>_bytes" column a role and "mark"; rows of `tl` after `prefix`, times
// (t - t0) / ticks_per_second (divided, so that whole ticks print as the decimals they are:
// 1198430 ns is 0.00119843, not 0.0011984300000000001), the highest point marked "peak"; the
// stacked chart with it red.
void AddRoleTimelineColumns(std::vector<report::Column>& cols);
void AppendRoleTimeline(const std::vector<memory::RolePoint>& tl, double ticks_per_second,
                        int64_t t0, const std::vector<report::Value>& prefix,
                        std::vector<std::vector<report::Value>>& rows);
void AddRoleTimelineChart(report::Table& t);

namespace detail {
inline std::string Dev(int64_t device) { return "cuda:" + std::to_string(device); }
inline double Sec(int64_t us) { return static_cast<double>(us) / 1e6; }
inline double Share(int64_t part, int64_t whole) {
  return whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}
inline std::string Bytes(int64_t b) { return report::FormatHuman(b, report::Unit::kBytes); }
}  // namespace detail

}  // namespace trainprof::snapshot
