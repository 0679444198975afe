#include "operators/activation_steps.h"

#include <fmt/format.h>

#include <map>
#include <unordered_map>
#include <utility>

namespace trainprof::torchlib {
namespace {

using DeviceKey = std::pair<int16_t, int16_t>;  // (type, index)

struct Live {
  int64_t bytes;
  int64_t step;
};
using LiveBlocks = std::map<DeviceKey, std::unordered_map<uint64_t, Live>>;

int DeviceClassOf(int16_t device_type) { return device_type == 1 ? kCuda : kCpu; }

// Where each recorded step's backward pass began (its first autograd-engine operator).
std::map<int64_t, int64_t> BackwardBegins(const OpData& data, StepRange steps) {
  std::map<int64_t, int64_t> begin;
  for (const OpEvent& e : data.ops) {
    if (!e.backward || !steps.Contains(e.step)) continue;
    auto [it, added] = begin.try_emplace(e.step, e.begin_ns);
    if (!added) it->second = std::min(it->second, e.begin_ns);
  }
  return begin;
}

// The bytes of `step` still live, per device class seen.
void AddActivations(const LiveBlocks& live, int64_t step, std::vector<StepActivation>& out) {
  for (int dc = 0; dc < kDeviceClasses; ++dc) {
    int64_t bytes = 0;
    bool seen = false;
    for (const auto& [key, blocks] : live) {
      if (DeviceClassOf(key.first) != dc) continue;
      seen = true;
      for (const auto& [ptr, l] : blocks)
        if (l.step == step) bytes += l.bytes;
    }
    if (seen) out.push_back({step, dc, bytes});
  }
}

}  // namespace

std::vector<StepActivation> StepActivations(const OpData& data, StepRange steps) {
  const std::map<int64_t, int64_t> backward = BackwardBegins(data, steps);
  std::vector<StepActivation> out;
  LiveBlocks live;
  auto next = backward.begin();
  for (const MemEvent& m : data.mem) {
    for (; next != backward.end() && next->second <= m.t_ns; ++next)
      AddActivations(live, next->first, out);
    auto& blocks = live[{m.device_type, m.device_index}];
    if (m.bytes > 0) {
      blocks[m.ptr] = {m.bytes, m.step};
    } else {
      blocks.erase(m.ptr);
    }
  }
  for (; next != backward.end(); ++next) AddActivations(live, next->first, out);
  return out;
}

std::string DeviceName(int16_t device_type, int16_t device_index) {
  const char* kind = device_type == 0 ? "cpu" : device_type == 1 ? "cuda" : "device";
  if (device_type == 0 || device_index < 0) {
    return device_type <= 1 ? kind : fmt::format("device{}", device_type);
  }
  return device_type == 1 ? fmt::format("cuda:{}", device_index)
                          : fmt::format("device{}:{}", device_type, device_index);
}

}  // namespace trainprof::torchlib
