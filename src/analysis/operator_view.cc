#include "analysis/operator_view.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <unordered_map>

#include "analysis/kernel_class.h"

namespace trainprof::analysis {

using trace::EventKind;

namespace {

// True when node k runs inside a call of its own row (aten::copy_ calling aten::copy_): its
// time is in that call's total already. `keys`: each node's row, parallel to t.nodes.
template <typename Key>
bool InsideItsOwnRow(const OpTree& t, const std::vector<Key>& keys, size_t k) {
  for (int32_t p = t.nodes[k].parent; p >= 0; p = t.nodes[static_cast<size_t>(p)].parent)
    if (keys[static_cast<size_t>(p)] == keys[k]) return true;
  return false;
}

// Adds node k of `t` to row r. Totals count a call nested in one of its own row once (`outer`
// false: the outer call's total holds it), so a total never exceeds the operator's time. A node
// merged into its parent (MergedIntoParent) adds its self times to the row, not a call.
void AccumulateRow(const trace::TraceModel& m, const OpTree& t, size_t k, bool outer,
                   OperatorRow& r, bool merged = false) {
  if (!merged) r.calls++;
  r.host_self_ns += t.host_self_ns[k];
  r.device_self_ns += t.device_self_ns[k];
  r.tc_self_ns += t.tc_self(k);
  if (outer) {
    r.host_total_ns += m.dur_ns[t.nodes[k].event];
    r.device_total_ns += t.device_total_ns[k];
    r.tc_total_ns += t.tc_total(k);
  }
  r.tc_eligible = r.tc_eligible || t.nodes[k].tc_eligible;
}

void SortRows(std::vector<OperatorRow>& out) {
  std::sort(out.begin(), out.end(), [](const OperatorRow& a, const OperatorRow& b) {
    if (a.device_total_ns != b.device_total_ns) return a.device_total_ns > b.device_total_ns;
    if (a.host_total_ns != b.host_total_ns) return a.host_total_ns > b.host_total_ns;
    if (a.name != b.name) return a.name < b.name;
    return a.input_dims != b.input_dims ? a.input_dims < b.input_dims : a.call_stack < b.call_stack;
  });
}

// The inputs of event e, searched from the previous answer onwards first: the tree lists one
// thread's operators in time order, which is nearly file order, so most searches are short.
class InputsCursor {
 public:
  explicit InputsCursor(const trace::TraceModel& m) : m_(m), v_(m.op_inputs) {}
  const trace::OpInputs* Find(uint32_t e) {
    size_t lo = 0, hi = v_.size();
    if (at_ < v_.size() && v_[at_].first <= e) {  // gallop forward from the last answer
      lo = at_;
      size_t step = 1;
      while (lo + step < v_.size() && v_[lo + step].first <= e) lo += step, step *= 2;
      hi = std::min(v_.size(), lo + step + 1);
    }
    auto it = std::lower_bound(v_.begin() + static_cast<std::ptrdiff_t>(lo),
                               v_.begin() + static_cast<std::ptrdiff_t>(hi), e,
                               [](const auto& in, uint32_t x) { return in.first < x; });
    at_ = static_cast<size_t>(it - v_.begin());
    return it != v_.end() && it->first == e ? &m_.input_sets[it->second] : nullptr;
  }

 private:
  const trace::TraceModel& m_;
  const std::vector<std::pair<uint32_t, uint32_t>>& v_;
  size_t at_ = 0;
};

}  // namespace

std::vector<bool> MergedIntoParent(const trace::TraceModel& m, const OpTree& t) {
  std::vector<int32_t> op_children(t.nodes.size(), 0);
  for (const OpNode& n : t.nodes)
    if (n.parent >= 0 && m.kind[n.event] == EventKind::kCpuOp) ++op_children[n.parent];
  std::vector<bool> out(t.nodes.size(), false);
  for (size_t k = 0; k < t.nodes.size(); ++k) {
    const int32_t p = t.nodes[k].parent;
    if (p < 0 || m.kind[t.nodes[k].event] != EventKind::kCpuOp) continue;
    const uint32_t pe = t.nodes[static_cast<size_t>(p)].event;
    const uint32_t e = t.nodes[k].event;
    // The plugin nests a range only when it starts before its parent ends: a zero-length call
    // holds none, so two zero-length calls at one time are two calls.
    out[k] = m.kind[pe] == EventKind::kCpuOp && m.name[pe] == m.name[e] && op_children[p] == 1 &&
             m.ts_ns[e] < m.end_ns(pe);
  }
  return out;
}

std::vector<OperatorRow> OperatorView(const trace::TraceModel& m, const OpTree& t) {
  std::unordered_map<uint32_t, OperatorRow> by_name;
  std::vector<uint32_t> keys(t.nodes.size());
  for (size_t k = 0; k < t.nodes.size(); ++k) keys[k] = m.name[t.nodes[k].event];
  const std::vector<bool> merged = MergedIntoParent(m, t);
  for (size_t k = 0; k < t.nodes.size(); ++k) {
    const OpNode& n = t.nodes[k];
    if (m.kind[n.event] != EventKind::kCpuOp) continue;
    if (IsExcludedFromOperatorView(m.name_of(n.event))) continue;
    AccumulateRow(m, t, k, !InsideItsOwnRow(t, keys, k), by_name[keys[k]], merged[k]);
  }
  std::vector<OperatorRow> out;
  out.reserve(by_name.size());
  for (auto& [id, r] : by_name) {
    r.name = m.names[id];
    out.push_back(std::move(r));
  }
  SortRows(out);
  return out;
}

namespace {

// Calls grouped by operator name and one of their OpInputs texts (`key`), for the calls that
// have it; `text` receives the key's text in each row.
std::vector<OperatorRow> GroupedBy(const trace::TraceModel& m, const OpTree& t,
                                   uint32_t trace::OpInputs::*key, std::string OperatorRow::*text) {
  if (m.op_inputs.empty()) return {};
  InputsCursor inputs(m);
  // Each node's row as a 4-byte index (a million nodes on 1 GB): rows are found by their key,
  // name id << 32 | text id.
  std::unordered_map<uint64_t, uint32_t> row_of;
  std::vector<OperatorRow> out;
  constexpr uint32_t kNone = UINT32_MAX;
  std::vector<uint32_t> rows(t.nodes.size(), kNone);
  for (size_t k = 0; k < t.nodes.size(); ++k) {
    const OpNode& n = t.nodes[k];
    if (m.kind[n.event] != EventKind::kCpuOp) continue;
    const trace::OpInputs* in = inputs.Find(n.event);
    if (in == nullptr || in->*key == trace::kNoName) continue;
    if (IsExcludedFromOperatorView(m.name_of(n.event))) continue;
    auto [it, fresh] = row_of.try_emplace(uint64_t{m.name[n.event]} << 32 | in->*key,
                                          static_cast<uint32_t>(out.size()));
    if (fresh) {
      out.emplace_back().name = m.name_of(n.event);
      out.back().*text = m.names[in->*key];
    }
    rows[k] = it->second;
  }
  // A merged node's self times go to its parent's row (the parent's inputs key it), parents
  // first so a chain of merges ends in its top; without a parent row it stays a call of its own.
  std::vector<bool> merged = MergedIntoParent(m, t);
  for (size_t k = 0; k < t.nodes.size(); ++k) {
    if (!merged[k]) continue;
    const uint32_t parent_row = rows[static_cast<size_t>(t.nodes[k].parent)];
    merged[k] = parent_row != kNone;
    if (merged[k]) rows[k] = parent_row;
  }
  for (size_t k = 0; k < t.nodes.size(); ++k)
    if (rows[k] != kNone)
      AccumulateRow(m, t, k, !InsideItsOwnRow(t, rows, k), out[rows[k]], merged[k]);
  // A row made for a call that then merged into its parent's row holds nothing: drop it.
  std::erase_if(out, [](const OperatorRow& r) { return r.calls == 0; });
  out.shrink_to_fit();  // a summary keeps the rows: with 1,000 ranks the slack was 10 MB
  SortRows(out);
  return out;
}

}  // namespace

std::vector<OperatorRow> OperatorViewByShape(const trace::TraceModel& m, const OpTree& t) {
  return GroupedBy(m, t, &trace::OpInputs::dims, &OperatorRow::input_dims);
}

std::vector<OperatorRow> OperatorViewByStack(const trace::TraceModel& m, const OpTree& t) {
  return GroupedBy(m, t, &trace::OpInputs::stack, &OperatorRow::call_stack);
}

namespace {

struct KernelAcc {
  KernelRow row;
  double blocks_weighted = 0, occupancy_weighted = 0;
  bool has_blocks = false, has_occupancy = false;
};

void AddInstance(const trace::TraceModel& m, size_t i, const trace::KernelStats& s, KernelAcc& a) {
  const int64_t d = m.dur_ns[i];
  KernelRow& r = a.row;
  if (r.calls == 0) r.min_ns = r.max_ns = d;
  r.calls++;
  r.total_ns += d;
  r.min_ns = std::min(r.min_ns, d);
  r.max_ns = std::max(r.max_ns, d);
  if (std::isfinite(s.blocks_per_sm)) {
    a.blocks_weighted += static_cast<double>(s.blocks_per_sm) * static_cast<double>(d);
    a.has_blocks = true;
  }
  if (std::isfinite(s.occupancy_pct)) {
    a.occupancy_weighted += static_cast<double>(s.occupancy_pct) * static_cast<double>(d);
    a.has_occupancy = true;
  }
}

double WeightedMean(double weighted, int64_t total_ns, bool any) {
  if (!any) return std::nan("");
  return total_ns > 0 ? weighted / static_cast<double>(total_ns) : 0;
}

}  // namespace

std::vector<KernelRow> KernelView(const trace::TraceModel& m, const OpTree& t, bool per_operator) {
  // Keyed by (operator name id + 1, kernel name id); operator 0 when not split or not launched
  // by a range.
  std::unordered_map<uint64_t, KernelAcc> acc;  // (operator << 32) | kernel name
  size_t next_stats = 0;  // kernel_stats is in event order too: a cursor, not a search each
  for (size_t i = 0; i < m.size(); ++i) {
    if (m.kind[i] != EventKind::kKernel) continue;
    uint64_t op = 0;
    if (per_operator && !t.owner.empty() && t.owner[i] >= 0)
      op = uint64_t{m.name[t.nodes[t.owner[i]].event]} + 1;
    while (next_stats < m.kernel_stats.size() && m.kernel_stats[next_stats].event < i) ++next_stats;
    const bool has = next_stats < m.kernel_stats.size() && m.kernel_stats[next_stats].event == i;
    AddInstance(m, i, has ? m.kernel_stats[next_stats] : trace::KernelStats{},
                acc[(op << 32) | m.name[i]]);
  }
  std::vector<KernelRow> out;
  out.reserve(acc.size());
  for (auto& [key, a] : acc) {
    KernelRow r = std::move(a.row);
    const uint32_t name = static_cast<uint32_t>(key & 0xffffffffu);
    const uint64_t op = key >> 32;
    r.name = m.names[name];
    if (op > 0) r.op = m.names[static_cast<uint32_t>(op - 1)];
    const int8_t tc = name < t.tc_by_name.size() ? t.tc_by_name[name] : -1;
    r.tensor_cores = tc >= 0 ? tc == 1 : KernelUsesTensorCores(r.name);
    r.blocks_per_sm = WeightedMean(a.blocks_weighted, r.total_ns, a.has_blocks);
    r.occupancy_pct = WeightedMean(a.occupancy_weighted, r.total_ns, a.has_occupancy);
    out.push_back(std::move(r));
  }
  std::sort(out.begin(), out.end(), [](const KernelRow& a, const KernelRow& b) {
    if (a.total_ns != b.total_ns) return a.total_ns > b.total_ns;
    return a.op != b.op ? a.op < b.op : a.name < b.name;
  });
  return out;
}

}  // namespace trainprof::analysis
