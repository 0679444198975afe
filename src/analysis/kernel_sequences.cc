#include "analysis/kernel_sequences.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>

namespace trainprof::analysis {

using trace::EventKind;

namespace {

// Per node: the outermost cpu_op around it (itself included), or -1.
std::vector<int32_t> OutermostOps(const trace::TraceModel& m, const OpTree& t) {
  std::vector<int32_t> top(t.nodes.size(), -1);
  for (size_t k = 0; k < t.nodes.size(); ++k) {
    const OpNode& n = t.nodes[k];
    if (n.parent >= 0 && top[n.parent] >= 0)
      top[k] = top[n.parent];
    else if (m.kind[n.event] == EventKind::kCpuOp &&
             !IsExcludedFromOperatorView(m.name_of(n.event)))
      top[k] = static_cast<int32_t>(k);
  }
  return top;
}

struct Launched {
  int64_t ts;      // the kernel's GPU start
  int32_t op;      // node of the outermost operator
  uint32_t event;  // the kernel
};

struct Count {
  uint32_t op_name = 0;
  std::vector<uint32_t> kernels;
  int64_t calls = 0, total_ns = 0;
};

}  // namespace

std::vector<KernelSequence> FrequentKernelSequences(const trace::TraceModel& m, const OpTree& t,
                                                    const KernelSequenceOptions& o) {
  const std::vector<int32_t> top = OutermostOps(m, t);
  std::vector<Launched> launched;
  for (size_t i = 0; i < m.size(); ++i)
    if (m.kind[i] == EventKind::kKernel && !t.owner.empty() && t.owner[i] >= 0 &&
        top[t.owner[i]] >= 0)
      launched.push_back({m.ts_ns[i], top[t.owner[i]], static_cast<uint32_t>(i)});
  std::sort(launched.begin(), launched.end(), [](const Launched& a, const Launched& b) {
    return a.op != b.op ? a.op < b.op : a.ts != b.ts ? a.ts < b.ts : a.event < b.event;
  });
  // Key: the operator's name id and the kernels' name ids, as bytes.
  std::unordered_map<std::string, Count> counts;
  for (size_t a = 0; a < launched.size();) {
    size_t b = a;
    while (b < launched.size() && launched[b].op == launched[a].op) ++b;
    if (b - a >= o.min_length) {
      Count c;
      c.op_name = m.name[t.nodes[launched[a].op].event];
      int64_t ns = 0;
      for (size_t k = a; k < b; ++k) {
        c.kernels.push_back(m.name[launched[k].event]);
        ns += m.dur_ns[launched[k].event];
      }
      std::string key(reinterpret_cast<const char*>(&c.op_name), sizeof(uint32_t));
      key.append(reinterpret_cast<const char*>(c.kernels.data()),
                 c.kernels.size() * sizeof(uint32_t));
      Count& slot = counts.try_emplace(std::move(key), std::move(c)).first->second;
      slot.calls++;
      slot.total_ns += ns;
    }
    a = b;
  }
  std::vector<const Count*> ranked;
  for (const auto& [key, c] : counts)
    if (c.calls >= o.min_calls) ranked.push_back(&c);
  std::sort(ranked.begin(), ranked.end(), [&](const Count* x, const Count* y) {
    if (x->total_ns != y->total_ns) return x->total_ns > y->total_ns;
    if (x->op_name != y->op_name) return m.names[x->op_name] < m.names[y->op_name];
    return x->kernels < y->kernels;
  });
  if (ranked.size() > o.top) ranked.resize(o.top);
  std::vector<KernelSequence> out;
  for (const Count* c : ranked) {
    KernelSequence s{.op = m.names[c->op_name], .calls = c->calls, .total_ns = c->total_ns};
    for (uint32_t k : c->kernels) s.kernels.push_back(m.names[k]);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace trainprof::analysis
