#include "analysis/phase_view.h"

#include <algorithm>
#include <unordered_map>

#include "analysis/kernel_class.h"
#include "analysis/steps.h"
#include "base/text.h"

namespace trainprof::analysis {

using trace::EventKind;

bool IsDataLoaderName(std::string_view name, const std::vector<std::string>& patterns) {
  if (IsDataLoaderOp(name)) return true;
  return std::any_of(patterns.begin(), patterns.end(), [&](const std::string& p) {
    return !p.empty() && name.find(p) != std::string_view::npos;
  });
}

std::string PhaseOf(std::string_view name, const std::vector<std::string>& patterns) {
  if (IsDataLoaderName(name, patterns)) return "dataloader";
  if (base::ContainsNoCase(name, "optimizer")) return "optimizer";
  if (base::ContainsNoCase(name, "backward")) return "backward";
  if (base::ContainsNoCase(name, "forward")) return "forward";
  return "user";
}

PhaseResult ComputePhases(const trace::TraceModel& m, const OpTree& t,
                          const std::vector<std::string>& dataloader_patterns,
                          const std::vector<std::string>& steps_from) {
  PhaseResult r;
  std::unordered_map<uint32_t, PhaseRow> by_name;
  std::vector<int8_t> is_step(m.names.size(), -1), is_loader(m.names.size(), -1);
  auto step = [&](uint32_t nm) {
    if (is_step[nm] < 0) is_step[nm] = StepNumber(m.names[nm], steps_from, 0) >= 0 ? 1 : 0;
    return is_step[nm] == 1;
  };
  for (size_t node = 0; node < t.nodes.size(); ++node) {
    const OpNode& n = t.nodes[node];
    const uint32_t nm = m.name[n.event];
    const EventKind k = m.kind[n.event];
    if (k == EventKind::kPythonFunction || step(nm)) continue;
    if (is_loader[nm] < 0) is_loader[nm] = IsDataLoaderName(m.names[nm], dataloader_patterns);
    if (is_loader[nm]) r.dataloader_markers++;
    if (k != EventKind::kUserAnnotation) continue;
    PhaseRow& row = by_name[nm];
    row.calls++;
    row.cpu_ns += m.dur_ns[n.event];
    row.device_ns += t.device_total_ns[node];
  }
  for (size_t i = 0; i < m.size(); ++i) {
    if (m.kind[i] != EventKind::kGpuUserAnnotation || step(m.name[i])) continue;
    PhaseRow& row = by_name[m.name[i]];
    row.gpu_calls++;
    row.gpu_ns += m.dur_ns[i];
  }
  for (auto& [nm, row] : by_name) {
    row.name = m.names[nm];
    row.phase = PhaseOf(row.name, dataloader_patterns);
    r.rows.push_back(std::move(row));
  }
  std::sort(r.rows.begin(), r.rows.end(), [](const PhaseRow& a, const PhaseRow& b) {
    const int64_t ta = a.cpu_ns + a.gpu_ns, tb = b.cpu_ns + b.gpu_ns;
    return ta != tb ? ta > tb : a.name < b.name;
  });
  return r;
}

}  // namespace trainprof::analysis
