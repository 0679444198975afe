#include "analysis/hta/hta_sequences.h"

#include <algorithm>
#include <map>

#include "analysis/op_tree.h"
#include "analysis/steps.h"

namespace trainprof::analysis {

namespace {

// A call of a matching operator at the least depth, and the GPU events it launched.
struct RootCall {
  std::vector<std::pair<int64_t, uint32_t>> gpu;  // (start, event)
  int64_t gpu_ns = 0;
};

}  // namespace

std::vector<HtaSequence> HtaKernelSequences(const trace::TraceModel& m, const HtaOptions& o,
                                            std::string_view operator_name, size_t min_length) {
  const HtaEvents ev = SelectHtaEvents(m, StepsResult{}, o);
  const OpTree tree = BuildOpTree(m);
  const size_t n = tree.nodes.size();
  std::vector<int32_t> depth(n, 0);
  int32_t least = -1;
  std::vector<bool> match(m.names.size(), false);
  for (size_t id = 0; id < m.names.size(); ++id)
    match[id] = !operator_name.empty() && m.names[id].find(operator_name) != std::string::npos;
  for (size_t k = 0; k < n; ++k) {
    const OpNode& node = tree.nodes[k];
    if (node.parent >= 0) depth[k] = depth[node.parent] + 1;
    const uint32_t e = node.event;
    if (match[m.name[e]] && ev.times.ts(e) < ev.cpu_before && (least < 0 || depth[k] < least))
      least = depth[k];
  }
  if (least < 0 || tree.owner.empty()) return {};
  std::map<int32_t, RootCall> calls;  // by node
  for (const HtaEv& g : ev.ev) {
    if (!trace::IsGpuKind(m.kind[g.event])) continue;
    int32_t k = tree.owner[g.event];
    while (k >= 0 && depth[k] > least) k = tree.nodes[k].parent;
    if (k < 0 || depth[k] != least || !match[m.name[tree.nodes[k].event]]) continue;
    RootCall& c = calls[k];
    c.gpu.push_back({g.ts, g.event});
    c.gpu_ns += g.end - g.ts;
  }
  std::map<std::string, HtaSequence> by_pattern;
  for (auto& [k, c] : calls) {
    if (c.gpu.size() < min_length) continue;
    std::stable_sort(c.gpu.begin(), c.gpu.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    const uint32_t e = tree.nodes[k].event;
    std::string pattern = m.name_of(e);
    for (const auto& [ts, g] : c.gpu) pattern += "|" + m.name_of(g);
    HtaSequence& s = by_pattern[pattern];
    s.pattern = pattern;
    s.count++;
    s.gpu_ns += c.gpu_ns;
    s.cpu_ns += ev.times.end(e) - ev.times.ts(e);
  }
  std::vector<HtaSequence> out;
  for (auto& [p, s] : by_pattern) out.push_back(std::move(s));
  std::stable_sort(out.begin(), out.end(),
                   [](const HtaSequence& a, const HtaSequence& b) { return a.count > b.count; });
  return out;
}

}  // namespace trainprof::analysis
