#include "analysis/memory_view.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string_view>
#include <unordered_map>

#include "analysis/memory_roles.h"
#include "memory/allocation_log.h"
#include "memory/roles.h"

namespace trainprof::analysis {

using trace::kNoName;
using trace::kNone;
using trace::MemoryEvent;
using trace::TraceModel;

namespace {

constexpr uint32_t kNoOp = UINT32_MAX;

// The cpu_ops of the threads that have memory events, by start time, the longest first.
std::unordered_map<uint32_t, std::vector<uint32_t>> OpsByTrack(const TraceModel& m) {
  std::unordered_map<uint32_t, std::vector<uint32_t>> by;
  for (const MemoryEvent& e : m.memory_events) by.try_emplace(e.track);
  for (size_t i = 0; i < m.size(); ++i) {
    if (m.kind[i] != trace::EventKind::kCpuOp) continue;
    if (auto it = by.find(m.track[i]); it != by.end())
      it->second.push_back(static_cast<uint32_t>(i));
  }
  for (auto& [track, ops] : by)
    std::ranges::sort(ops, [&](uint32_t a, uint32_t b) {
      return m.ts_ns[a] != m.ts_ns[b] ? m.ts_ns[a] < m.ts_ns[b] : m.end_ns(a) > m.end_ns(b);
    });
  return by;
}

// The cpu_ops open at a time on one thread, outermost first; times only move forward.
class OpenOps {
 public:
  OpenOps(const TraceModel& m, const std::vector<uint32_t>& ops) : m_(m), ops_(ops) {}

  const std::vector<uint32_t>& At(int64_t ts) {
    while (next_ < ops_.size() && m_.ts_ns[ops_[next_]] <= ts) {
      PopEndedBy(m_.ts_ns[ops_[next_]]);
      stack_.push_back(ops_[next_++]);
    }
    PopEndedBy(ts);
    return stack_;
  }

 private:
  void PopEndedBy(int64_t t) {  // [start, end): an op ending at t no longer holds t
    while (!stack_.empty() && m_.end_ns(stack_.back()) <= t) stack_.pop_back();
  }
  const TraceModel& m_;
  const std::vector<uint32_t>& ops_;
  size_t next_ = 0;
  std::vector<uint32_t> stack_;
};

}  // namespace

void ForEachMemoryEventStack(const TraceModel& m,
                             const std::function<void(size_t, const std::vector<uint32_t>&)>& f) {
  const auto by_track = OpsByTrack(m);
  std::unordered_map<uint32_t, OpenOps> open;
  for (const auto& [track, ops] : by_track) open.try_emplace(track, m, ops);
  for (size_t k = 0; k < m.memory_events.size(); ++k) {
    const MemoryEvent& e = m.memory_events[k];
    const std::vector<uint32_t>& stack = open.at(e.track).At(e.ts_ns);
    if (!stack.empty()) f(k, stack);
  }
}

namespace {

using OpKey = std::pair<int64_t, uint32_t>;  // device, operator name id

void CountBytes(OperatorMemory& o, int64_t bytes, bool self) {
  int64_t& count = self ? o.self_count : o.total_count;
  int64_t& allocated = self ? o.self_bytes : o.total_bytes;
  int64_t& increase = self ? o.self_increase : o.total_increase;
  if (bytes > 0) ++count, allocated += bytes;
  increase += bytes;
}

// Where the ops open around a memory event say it was made: inside autograd's backward (an
// evaluate_function op), inside the optimizer's step.
uint8_t OriginOf(const TraceModel& m, const std::vector<uint32_t>& stack) {
  uint8_t o = 0;
  for (uint32_t op : stack) {
    const std::string_view name = m.names[m.name[op]];
    if (name.starts_with("autograd::engine::evaluate_function")) o |= memory::kOnAutogradThread;
    if (memory::OptimizerPhaseOf(name) == memory::Phase::kOptimizer) o |= memory::kOptimizerStep;
  }
  return o;
}

// Per memory event, the innermost cpu_op holding it (kNoOp: none) and its origin, and the
// per-operator figures.
std::vector<uint32_t> Attribute(const TraceModel& m, std::map<OpKey, OperatorMemory>& per_op,
                                std::vector<uint8_t>& origin) {
  std::vector<uint32_t> owner(m.memory_events.size(), kNoOp);
  origin.assign(m.memory_events.size(), 0);
  ForEachMemoryEventStack(m, [&](size_t k, const std::vector<uint32_t>& stack) {
    const MemoryEvent& e = m.memory_events[k];
    owner[k] = stack.back();
    origin[k] = OriginOf(m, stack);
    CountBytes(per_op[{e.device_id, m.name[stack.back()]}], e.bytes, true);
    for (uint32_t op : stack) CountBytes(per_op[{e.device_id, m.name[op]}], e.bytes, false);
  });
  return owner;
}

std::vector<OperatorMemory> OperatorRows(const TraceModel& m,
                                         std::map<OpKey, OperatorMemory>& per_op) {
  std::unordered_map<uint32_t, int64_t> calls;
  for (size_t i = 0; i < m.size(); ++i)
    if (m.kind[i] == trace::EventKind::kCpuOp) ++calls[m.name[i]];
  std::vector<OperatorMemory> rows;
  for (auto& [key, o] : per_op) {
    o.device = key.first;
    o.op = key.second;
    o.calls = calls[key.second];
    rows.push_back(o);
  }
  std::ranges::stable_sort(rows, [](const OperatorMemory& a, const OperatorMemory& b) {
    return a.device != b.device ? a.device < b.device : a.total_increase > b.total_increase;
  });
  return rows;
}

// Allocations matched to their frees by device and address, as the allocation log (seq: the
// memory event's index; a free of memory from before the trace is a block made before it).
struct Matched {
  memory::AllocationLog log;
  int64_t frees_without_alloc = 0;
};

Matched MatchAllocations(const TraceModel& m, const std::vector<uint32_t>& owner,
                         const std::vector<uint8_t>& origin) {
  Matched out;
  std::map<std::pair<int64_t, uint64_t>, size_t> live;  // (device, addr) -> block
  for (size_t k = 0; k < m.memory_events.size(); ++k) {
    const MemoryEvent& e = m.memory_events[k];
    const std::pair<int64_t, uint64_t> key{e.device_id, e.addr};
    const auto seq = static_cast<int64_t>(k);
    if (e.bytes > 0) {
      const uint32_t op = owner[k] == kNoOp ? kNoName : m.name[owner[k]];
      if (e.addr != 0) live[key] = out.log.blocks.size();
      out.log.blocks.push_back({.device = e.device_id,
                                .bytes = e.bytes,
                                .alloc_seq = seq,
                                .alloc_time = e.ts_ns,
                                .addr = e.addr,
                                .op = op,
                                .origin = origin[k]});
    } else if (e.bytes < 0) {
      auto it = e.addr != 0 ? live.find(key) : live.end();
      if (it == live.end()) {
        ++out.frees_without_alloc;
        out.log.blocks.push_back({.device = e.device_id,
                                  .bytes = -e.bytes,
                                  .free_seq = seq,
                                  .free_time = e.ts_ns,
                                  .addr = e.addr});
        continue;
      }
      out.log.blocks[it->second].free_seq = seq;
      out.log.blocks[it->second].free_time = e.ts_ns;
      live.erase(it);
    }
  }
  return out;
}

bool MadeInTrace(const memory::Block& b) { return b.alloc_seq != memory::kBefore; }

// The allocations of the log, for the report's table.
std::vector<Allocation> Allocations(const memory::AllocationLog& log) {
  std::vector<Allocation> out;
  for (const memory::Block& b : log.blocks)
    if (MadeInTrace(b))
      out.push_back({b.device, b.op, b.bytes, b.alloc_time,
                     b.free_seq == memory::kNever ? kNone : b.free_time});
  return out;
}

// The allocated / reserved curve of each device: the totals where the trace has them, else the
// running sum of the changes. `peak_event[i]`: the memory event of device i's (first) peak.
std::vector<DeviceMemory> Curves(const TraceModel& m, std::vector<size_t>* peak_event) {
  std::map<int64_t, size_t> index;
  std::vector<DeviceMemory> out;
  for (size_t k = 0; k < m.memory_events.size(); ++k) {
    const MemoryEvent& e = m.memory_events[k];
    auto [it, fresh] = index.try_emplace(e.device_id, out.size());
    if (fresh) out.push_back({.device = e.device_id}), peak_event->push_back(k);
    DeviceMemory& d = out[it->second];
    std::vector<MemoryPoint>& curve = d.series->curve;
    const int64_t running = (curve.empty() ? 0 : curve.back().allocated) + e.bytes;
    curve.push_back(
        {e.ts_ns, e.total_allocated != kNone ? e.total_allocated : running, e.total_reserved});
    if (curve.size() == 1 || curve.back().allocated > d.peak_allocated) {
      d.peak_allocated = curve.back().allocated;
      d.peak_ts_ns = e.ts_ns;
      (*peak_event)[it->second] = k;
    }
    if (e.total_reserved != kNone) d.peak_reserved = std::max(d.peak_reserved, e.total_reserved);
  }
  return out;
}

// What the matched allocations held at the device's peak, by operator.
void LiveAtPeak(DeviceMemory& d, size_t peak_event, const memory::AllocationLog& log) {
  int64_t known = 0;
  for (const memory::KeyBytes& k : memory::LiveAt(
           log, d.device, static_cast<int64_t>(peak_event),
           [](const memory::Block& b) { return b.op; }, MadeInTrace)) {
    d.series->live_at_peak.push_back({k.key, k.bytes});
    known += k.bytes;
  }
  d.live_unknown = std::max<int64_t>(0, d.peak_allocated - known);
}

// The names of the operators `r` refers to, and the trace's first timestamp.
void KeepNames(const trace::TraceModel& m, MemoryResult& r) {
  std::set<uint32_t> ids;
  for (const DeviceMemory& d : r.devices)
    for (const LiveBytes& l : d.series->live_at_peak) ids.insert(l.op);
  for (const Allocation& a : r.lists->allocations) ids.insert(a.op);
  for (const OperatorMemory& o : r.lists->operators) ids.insert(o.op);
  ids.erase(trace::kNoName);
  for (uint32_t id : ids) r.lists->op_names.emplace_back(id, m.names[id]);
  r.t0_ns = m.memory_events.empty() ? 0 : m.memory_events.front().ts_ns;
  for (size_t i = 0; i < m.size(); ++i) r.t0_ns = std::min(r.t0_ns, m.ts_ns[i]);
}

}  // namespace

MemoryResult MemoryView(const TraceModel& m) {
  MemoryResult r;
  if (m.memory_events.empty()) return r;
  r.events = static_cast<int64_t>(m.memory_events.size());
  std::map<OpKey, OperatorMemory> per_op;
  std::vector<uint8_t> origin;
  const std::vector<uint32_t> owner = Attribute(m, per_op, origin);
  r.unattributed = std::ranges::count(owner, kNoOp);
  r.lists->operators = OperatorRows(m, per_op);
  Matched matched = MatchAllocations(m, owner, origin);
  std::vector<size_t> peak_event;
  r.devices = Curves(m, &peak_event);
  for (size_t i = 0; i < r.devices.size(); ++i) {
    LiveAtPeak(r.devices[i], peak_event[i], matched.log);
    RolesAtPeak roles = MemoryRoles(m, r.devices[i].device, peak_event[i], matched.log);
    DeviceSeries& s = *r.devices[i].series;
    s.role_bytes = std::move(roles.role_bytes);
    s.role_timeline = std::move(roles.timeline);
    s.rule_bytes = std::move(roles.rule_bytes);
    r.devices[i].curve_points = static_cast<uint32_t>(s.curve.size());
    r.devices[i].role_points = static_cast<uint32_t>(s.role_timeline.size());
  }
  std::ranges::sort(r.devices, {}, &DeviceMemory::device);
  r.lists->allocations = Allocations(matched.log);
  r.frees_without_alloc = matched.frees_without_alloc;
  KeepNames(m, r);
  return r;
}

std::string MemoryResult::NameOf(uint32_t op) const {
  const auto& op_names = lists->op_names;
  auto it = std::lower_bound(op_names.begin(), op_names.end(), op,
                             [](const auto& n, uint32_t id) { return n.first < id; });
  return it != op_names.end() && it->first == op ? it->second : std::string("(no operator)");
}

}  // namespace trainprof::analysis
