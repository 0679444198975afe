#include "gpu/correlate.h"

#include <algorithm>
#include <unordered_map>

namespace trainprof::gpu {
namespace {

using torchlib::OpData;
using torchlib::OpEvent;

// Each call's device total: its own time plus that of every call nested inside it on its
// thread. Calls are visited per thread in begin order with a stack of the open ones; a call
// hands its total to its parent when it is popped.
void AddNestedDeviceTime(OpData& ops) {
  std::vector<size_t> order(ops.ops.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const OpEvent& x = ops.ops[a];
    const OpEvent& y = ops.ops[b];
    if (x.tid != y.tid) return x.tid < y.tid;
    if (x.begin_ns != y.begin_ns) return x.begin_ns < y.begin_ns;
    return x.dur_ns > y.dur_ns;  // the enclosing call first
  });
  for (OpEvent& e : ops.ops) e.device_ns = e.self_device_ns;
  std::vector<size_t> open;
  auto pop = [&] {
    const size_t child = open.back();
    open.pop_back();
    if (!open.empty()) ops.ops[open.back()].device_ns += ops.ops[child].device_ns;
  };
  for (size_t i : order) {
    const OpEvent& e = ops.ops[i];
    while (!open.empty()) {
      const OpEvent& top = ops.ops[open.back()];
      if (top.tid == e.tid && e.begin_ns < top.begin_ns + top.dur_ns) break;
      pop();
    }
    open.push_back(i);
  }
  while (!open.empty()) pop();
}

}  // namespace

DeviceTimeStats AttributeDeviceTime(const ActivityData& activity, OpData& ops) {
  const std::unordered_map<uint32_t, uint64_t> external = ExternalIds(activity);
  std::unordered_map<uint64_t, size_t> call;  // operator call id -> index
  call.reserve(ops.ops.size());
  for (size_t i = 0; i < ops.ops.size(); ++i) {
    ops.ops[i].self_device_ns = 0;
    if (ops.ops[i].id != 0) call[ops.ops[i].id] = i;
  }
  DeviceTimeStats stats;
  for (const DeviceActivity& a : activity.device) {
    if (a.kind == ActivityKind::kSync) continue;
    const int64_t dur = a.end_ns - a.begin_ns;
    auto x = external.find(a.correlation);
    auto c = x == external.end() ? call.end() : call.find(x->second);
    if (c == call.end()) {
      ++stats.unattributed;
      stats.unattributed_ns += dur;
      continue;
    }
    ops.ops[c->second].self_device_ns += dur;
    ++stats.attributed;
    stats.attributed_ns += dur;
  }
  AddNestedDeviceTime(ops);
  return stats;
}

}  // namespace trainprof::gpu
