// Diff by role: which role's memory moved between A and B at each side's peak (a larger batch
// moves activations, not optimizer state), from the Memory view's roles of each trace.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "analysis/diff.h"
#include "analysis/ranks/detail_store.h"
#include "memory/allocation_log.h"
#include "report/format.h"
#include "snapshot/snapshot_section.h"

namespace trainprof::analysis {
namespace {

using report::Unit;
using report::Value;

struct RolePeak {
  bool any = false;  // a rank with a device that has roles
  std::vector<double> roles = std::vector<double>(memory::kRoles, 0);
  double peak = 0;
};

// Per side: each rank's GPU with the highest peak (the CPU when it has none), averaged over the
// ranks that have roles.
RolePeak RolesOf(const DiffSide& s) {
  RolePeak out;
  double ranks = 0;
  for (const RankAnalysis& a : *s.analyses) {
    DetailHold hold(a);  // a side of many ranks keeps the roles in a scratch file
    const DeviceMemory* best = nullptr;
    for (const DeviceMemory& d : a.memory.devices) {
      if (d.series->role_bytes.size() != static_cast<size_t>(memory::kRoles)) continue;
      const bool better =
          best == nullptr || (d.device >= 0) > (best->device >= 0) ||
          ((d.device >= 0) == (best->device >= 0) && d.peak_allocated > best->peak_allocated);
      if (better) best = &d;
    }
    if (best == nullptr) continue;
    ranks += 1;
    for (int r = 0; r < memory::kRoles; ++r)
      out.roles[r] += static_cast<double>(best->series->role_bytes[r]);
    out.peak += static_cast<double>(best->peak_allocated);
  }
  if (ranks == 0) return out;
  out.any = true;
  for (double& v : out.roles) v /= ranks;
  out.peak /= ranks;
  return out;
}

std::vector<int64_t> Whole(const std::vector<double>& v) {
  return std::vector<int64_t>(v.begin(), v.end());
}

std::string Human(double b) { return report::FormatHuman(static_cast<int64_t>(b), Unit::kBytes); }

// "memory at the peak moved +1.2 GiB (a -> b): activation +1.1 GiB, ..."
void AddRoleFinding(report::Section& s, const RolePeak& a, const RolePeak& b) {
  const std::string moves = snapshot::RoleMoves(Whole(a.roles), Whole(b.roles),
                                                static_cast<int64_t>(std::max(a.peak, b.peak)));
  if (moves.empty()) {
    s.findings.push_back({report::Severity::kInfo,
                          "memory by role at the peak: no role moved by 1 % of the peak or more"});
    return;
  }
  s.findings.push_back(
      {report::Severity::kInfo,
       fmt::format("memory at the peak moved {}{} ({} -> {}): {}", b.peak < a.peak ? "-" : "+",
                   Human(std::abs(b.peak - a.peak)), Human(a.peak), Human(b.peak), moves)});
}

}  // namespace

void AddRoleDiff(report::Section& s, const DiffSide& a, const DiffSide& b) {
  const RolePeak ra = RolesOf(a), rb = RolesOf(b);
  if (!ra.any && !rb.any) return;
  if (ra.any != rb.any) {
    s.findings.push_back({report::Severity::kInfo,
                          fmt::format("memory by role: only {} has memory events (torch.profiler's "
                                      "profile_memory=True), so roles are not compared",
                                      ra.any ? "A" : "B")});
    return;
  }
  report::Table& t = s.AddTable("memory_role_diff", "Memory by role at the peak",
                                {{"role", "Role", Unit::kText},
                                 {"a_bytes", "A", Unit::kBytes},
                                 {"b_bytes", "B", Unit::kBytes},
                                 {"delta_bytes", "Delta", Unit::kBytes},
                                 {"delta_pct", "Delta %", Unit::kPercent}});
  auto row = [](double x, double y) {
    return std::pair(Value(static_cast<int64_t>(y - x)),
                     x > 0 ? Value(100 * (y - x) / x) : Value(std::monostate{}));
  };
  for (int r = 0; r < memory::kRoles; ++r) {
    if (ra.roles[r] == 0 && rb.roles[r] == 0) continue;
    auto [delta, pct] = row(ra.roles[r], rb.roles[r]);
    t.rows.push_back({memory::RoleName(static_cast<memory::Role>(r)),
                      static_cast<int64_t>(ra.roles[r]), static_cast<int64_t>(rb.roles[r]), delta,
                      pct});
  }
  auto [delta, pct] = row(ra.peak, rb.peak);
  t.footer.push_back({std::string("Peak"), static_cast<int64_t>(ra.peak),
                      static_cast<int64_t>(rb.peak), delta, pct});
  t.notes.push_back(
      "Each side's device with the highest peak, its roles as the Memory view's memory_roles "
      "table infers them (averaged over ranks).");
  AddRoleFinding(s, ra, rb);
}

}  // namespace trainprof::analysis
