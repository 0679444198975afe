#include "analysis/kernel_sequences.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>

namespace trainprof::analysis {

using trace::EventKind;

namespace {

// The outermost operator (a cpu_op the Operator view shows) around node k, itself included, or
// -1. Walked up the tree for each kernel instead of kept per node (4 bytes a node, 4 MB on a
// 1 GB trace); kernels launched in a row mostly share their node, so the last answer is kept.
class OutermostOp {
 public:
  OutermostOp(const trace::TraceModel& m, const OpTree& t)
      : m_(m), t_(t), shown_(m.names.size(), -1) {}
  int32_t operator()(int32_t k) {
    if (k == last_) return last_top_;
    last_ = k;
    last_top_ = -1;
    for (int32_t n = k; n >= 0; n = t_.nodes[n].parent)
      if (Shown(t_.nodes[n].event)) last_top_ = n;
    return last_top_;
  }

 private:
  bool Shown(uint32_t e) {
    if (m_.kind[e] != EventKind::kCpuOp) return false;
    int8_t& s = shown_[m_.name[e]];
    if (s < 0) s = IsExcludedFromOperatorView(m_.name_of(e)) ? 0 : 1;
    return s == 1;
  }
  const trace::TraceModel& m_;
  const OpTree& t_;
  std::vector<int8_t> shown_;  // per name id
  int32_t last_ = -1, last_top_ = -1;
};

// A kernel and the node of its outermost operator: 8 bytes, exactly reserved.
struct Launched {
  int32_t op;
  uint32_t event;
};

struct SequenceCount {
  uint32_t op_name = 0;
  std::vector<uint32_t> kernels;
  int64_t calls = 0, total_ns = 0;
};

}  // namespace

std::vector<KernelSequence> FrequentKernelSequences(const trace::TraceModel& m, const OpTree& t,
                                                    const KernelSequenceOptions& o) {
  std::vector<Launched> launched;
  if (!t.owner.empty()) {
    launched.reserve(std::ranges::count(m.kind, EventKind::kKernel));
    OutermostOp top(m, t);
    for (size_t i = 0; i < m.size(); ++i)
      if (m.kind[i] == EventKind::kKernel && t.owner[i] >= 0)
        if (const int32_t op = top(t.owner[i]); op >= 0)
          launched.push_back({op, static_cast<uint32_t>(i)});
  }
  // By operator, then by GPU start (then event): in event order first, which per operator is
  // nearly always GPU order already.
  std::sort(launched.begin(), launched.end(), [](const Launched& a, const Launched& b) {
    return a.op != b.op ? a.op < b.op : a.event < b.event;
  });
  auto by_start = [&](const Launched& a, const Launched& b) {
    const int64_t ta = m.ts_ns[a.event], tb = m.ts_ns[b.event];
    return ta != tb ? ta < tb : a.event < b.event;
  };
  // Key: the operator's name id and the kernels' name ids, as bytes.
  std::unordered_map<std::string, SequenceCount> counts;
  for (size_t a = 0; a < launched.size();) {
    size_t b = a;
    while (b < launched.size() && launched[b].op == launched[a].op) ++b;
    if (!std::is_sorted(launched.begin() + a, launched.begin() + b, by_start))
      std::sort(launched.begin() + a, launched.begin() + b, by_start);
    if (b - a >= o.min_length) {
      SequenceCount c;
      c.op_name = m.name[t.nodes[launched[a].op].event];
      int64_t ns = 0;
      for (size_t k = a; k < b; ++k) {
        c.kernels.push_back(m.name[launched[k].event]);
        ns += m.dur_ns[launched[k].event];
      }
      std::string key(reinterpret_cast<const char*>(&c.op_name), sizeof(uint32_t));
      key.append(reinterpret_cast<const char*>(c.kernels.data()),
                 c.kernels.size() * sizeof(uint32_t));
      SequenceCount& slot = counts.try_emplace(std::move(key), std::move(c)).first->second;
      slot.calls++;
      slot.total_ns += ns;
    }
    a = b;
  }
  std::vector<const SequenceCount*> ranked;
  for (const auto& [key, c] : counts)
    if (c.calls >= o.min_calls) ranked.push_back(&c);
  std::sort(ranked.begin(), ranked.end(), [&](const SequenceCount* x, const SequenceCount* y) {
    if (x->total_ns != y->total_ns) return x->total_ns > y->total_ns;
    if (x->op_name != y->op_name) return m.names[x->op_name] < m.names[y->op_name];
    return x->kernels < y->kernels;
  });
  if (ranked.size() > o.top) ranked.resize(o.top);
  std::vector<KernelSequence> out;
  for (const SequenceCount* c : ranked) {
    KernelSequence s{.op = m.names[c->op_name], .calls = c->calls, .total_ns = c->total_ns};
    for (uint32_t k : c->kernels) s.kernels.push_back(m.names[k]);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace trainprof::analysis
