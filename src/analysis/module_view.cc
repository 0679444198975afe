#include "analysis/module_view.h"

#include <algorithm>
#include <map>
#include <string_view>

namespace trainprof::analysis {

namespace {

constexpr std::string_view kPrefix = "nn.Module: ";

struct Acc {
  ModuleRow row;
  int parent = -1;  // row index
  std::vector<int> children;
};

void DepthFirst(std::vector<Acc>& acc, int k, int depth, const std::string& prefix,
                std::vector<ModuleRow>& out) {
  Acc& a = acc[k];
  a.row.depth = depth;
  a.row.path = prefix.empty() ? a.row.name : prefix + " > " + a.row.name;
  for (int c : a.children) a.row.self_device_ns -= acc[c].row.device_ns;
  out.push_back(a.row);
  std::vector<int> kids = a.children;
  std::stable_sort(kids.begin(), kids.end(),
                   [&](int x, int y) { return acc[x].row.host_ns > acc[y].row.host_ns; });
  const std::string path = out.back().path;
  for (int c : kids) DepthFirst(acc, c, depth + 1, path, out);
}

}  // namespace

std::vector<ModuleRow> ModuleView(const trace::TraceModel& m, const OpTree& t) {
  std::vector<int8_t> is_module(m.names.size(), -1);
  std::vector<int> row_of(t.nodes.size(), -1);     // the module row a node is, or lies in
  std::map<std::pair<int, uint32_t>, int> row_id;  // (parent row, name) -> row
  std::vector<Acc> acc;
  for (size_t k = 0; k < t.nodes.size(); ++k) {
    const OpNode& n = t.nodes[k];
    const int outer = n.parent >= 0 ? row_of[n.parent] : -1;
    row_of[k] = outer;
    const uint32_t nm = m.name[n.event];
    if (m.kind[n.event] != trace::EventKind::kPythonFunction) continue;
    if (is_module[nm] < 0) is_module[nm] = m.names[nm].starts_with(kPrefix) ? 1 : 0;
    if (!is_module[nm]) continue;
    auto [it, fresh] = row_id.try_emplace({outer, nm}, static_cast<int>(acc.size()));
    if (fresh) {
      acc.push_back({});
      acc.back().row.name = m.names[nm].substr(kPrefix.size());
      acc.back().parent = outer;
      if (outer >= 0) acc[outer].children.push_back(it->second);
    }
    ModuleRow& r = acc[it->second].row;
    r.calls++;
    r.host_ns += m.dur_ns[n.event];
    r.device_ns += t.device_total_ns[k];
    r.self_device_ns += t.device_total_ns[k];
    row_of[k] = it->second;
  }
  std::vector<ModuleRow> out;
  std::vector<int> roots;
  for (size_t k = 0; k < acc.size(); ++k)
    if (acc[k].parent < 0) roots.push_back(static_cast<int>(k));
  std::stable_sort(roots.begin(), roots.end(),
                   [&](int x, int y) { return acc[x].row.host_ns > acc[y].row.host_ns; });
  for (int r : roots) DepthFirst(acc, r, 0, "", out);
  return out;
}

}  // namespace trainprof::analysis
