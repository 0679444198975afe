#include "analysis/hta/hta_aten_ops.h"

#include <algorithm>

#include "analysis/op_tree.h"
#include "analysis/steps.h"

namespace trainprof::analysis {

namespace {

// HTA's KERNEL_LAUNCH_CATEGORY_PATTERN: (cuda.*LaunchKernel)|(cuLaunchKernel)|(^runFunction).
bool IsKernelLaunch(std::string_view name) {
  const size_t cuda = name.find("cuda");
  return (cuda != std::string_view::npos && name.find("LaunchKernel", cuda) != name.npos) ||
         name.find("cuLaunchKernel") != name.npos || name.starts_with("runFunction");
}

}  // namespace

std::vector<AtenOpLaunch> HtaAtenOpLaunches(const trace::TraceModel& m, const HtaOptions& o) {
  const HtaEvents ev = SelectHtaEvents(m, StepsResult{}, o);
  const OpTree tree = BuildOpTree(m);
  std::vector<std::pair<int32_t, AtenOpLaunch>> rows;  // (the launch call's event, row)
  if (tree.owner.empty() || m.launcher.empty()) return {};
  for (const HtaEv& e : ev.ev) {
    const int32_t call = m.launcher[e.event];
    if (call < 0 || !IsKernelLaunch(m.name_of(call))) continue;
    int32_t node = tree.owner[call];  // the innermost range around the call
    while (node >= 0 && !m.name_of(tree.nodes[node].event).starts_with("aten::"))
      node = tree.nodes[node].parent;
    if (node < 0) continue;
    const uint32_t op = tree.nodes[node].event;
    rows.push_back({call,
                    {.tid = m.tracks[m.track[op]].tid,
                     .op = m.name_of(op),
                     .op_ts_ns = ev.times.ts(op),
                     .launch_ts_ns = ev.times.ts(call),
                     .kernel_ts_ns = e.ts,
                     .correlation = m.correlation[e.event],
                     .kernel = m.name_of(e.event)}});
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<AtenOpLaunch> out;
  out.reserve(rows.size());
  for (auto& r : rows) out.push_back(std::move(r.second));
  return out;
}

}  // namespace trainprof::analysis
