#include "operators/op_events.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <unordered_map>

namespace trainprof::torchlib {

std::vector<OpRow> AggregateOps(const OpData& data, StepRange steps, bool by_shapes) {
  std::vector<OpRow> rows;
  std::unordered_map<uint64_t, size_t> index;  // (name << 32 | shapes) -> row
  for (const OpEvent& e : data.ops) {
    if (!steps.Contains(e.step)) continue;
    const uint32_t shapes = by_shapes ? e.shapes : 0;
    const uint64_t key = (uint64_t{e.name} << 32) | shapes;
    auto [it, added] = index.emplace(key, rows.size());
    if (added) {
      OpRow r;
      r.name = data.names[e.name];
      r.shapes = data.shapes[shapes];
      rows.push_back(std::move(r));
    }
    OpRow& r = rows[it->second];
    ++r.calls;
    r.self_s += static_cast<double>(e.self_ns) * 1e-9;
    r.total_s += static_cast<double>(e.dur_ns) * 1e-9;
    r.self_device_s += static_cast<double>(e.self_device_ns) * 1e-9;
    r.device_total_s += static_cast<double>(e.device_ns) * 1e-9;
    for (int d = 0; d < kDeviceClasses; ++d) {
      r.self_alloc[d] += e.self_alloc[d];
      r.self_freed[d] += e.self_freed[d];
      r.self_net[d] += e.self_alloc[d] - e.self_freed[d];
      r.total_net[d] += e.total_net[d];
    }
  }
  return rows;
}

std::vector<OpRow> RowsOfKeyAverages(const std::vector<analysis::KeyAverage>& averages) {
  std::vector<OpRow> rows;
  rows.reserve(averages.size());
  for (const analysis::KeyAverage& a : averages) {
    OpRow& r = rows.emplace_back();
    r.name = a.name;
    r.shapes = a.shapes;
    r.calls = a.calls;
    r.self_s = static_cast<double>(a.self_ns) * 1e-9;
    r.total_s = static_cast<double>(a.total_ns) * 1e-9;
    r.self_device_s = static_cast<double>(a.self_device_ns) * 1e-9;
    r.device_total_s = static_cast<double>(a.device_total_ns) * 1e-9;
    for (int d = 0; d < kDeviceClasses; ++d) {
      r.self_alloc[d] = a.self_alloc[d];
      r.self_freed[d] = a.self_freed[d];
      r.self_net[d] = a.self_alloc[d] - a.self_freed[d];
      r.total_net[d] = a.total_net[d];
    }
  }
  return rows;
}

bool ParseSortKey(const std::string& name, SortKey* out) {
  static const std::pair<const char*, SortKey> kKeys[] = {
      {"cpu_time_total", SortKey::kCpuTimeTotal},
      {"self_cpu_time_total", SortKey::kSelfCpuTimeTotal},
      {"cuda_time_total", SortKey::kCudaTimeTotal},
      {"self_cuda_time_total", SortKey::kSelfCudaTimeTotal},
      {"cpu_memory_usage", SortKey::kCpuMemory},
      {"self_cpu_memory_usage", SortKey::kSelfCpuMemory},
      {"count", SortKey::kCount}};
  for (const auto& [n, k] : kKeys) {
    if (name == n) {
      *out = k;
      return true;
    }
  }
  return false;
}

void SortOps(std::vector<OpRow>& rows, SortKey key) {
  auto value = [key](const OpRow& r) -> double {
    switch (key) {
      case SortKey::kCpuTimeTotal:
        return r.total_s;
      case SortKey::kSelfCpuTimeTotal:
        return r.self_s;
      case SortKey::kCudaTimeTotal:
        return r.device_total_s;
      case SortKey::kSelfCudaTimeTotal:
        return r.self_device_s;
      case SortKey::kCpuMemory:
        return static_cast<double>(r.total_net[kCpu]);
      case SortKey::kSelfCpuMemory:
        return static_cast<double>(r.self_net[kCpu]);
      case SortKey::kCount:
        return static_cast<double>(r.calls);
    }
    return 0;
  };
  std::stable_sort(rows.begin(), rows.end(), [&](const OpRow& a, const OpRow& b) {
    const double va = value(a), vb = value(b);
    if (va != vb) return va > vb;
    return a.name < b.name;
  });
}

std::string DeviceName(int16_t device_type, int16_t device_index) {
  const char* kind = device_type == 0 ? "cpu" : device_type == 1 ? "cuda" : "device";
  if (device_type == 0 || device_index < 0) {
    return device_type <= 1 ? kind : fmt::format("device{}", device_type);
  }
  return device_type == 1 ? fmt::format("cuda:{}", device_index)
                          : fmt::format("device{}:{}", device_type, device_index);
}

namespace {

using DeviceKey = std::pair<int16_t, int16_t>;  // (type, index)

struct Live {
  int64_t bytes;
  uint32_t op;
  int64_t step;
};

int DeviceClassOf(int16_t device_type) { return device_type == 1 ? kCuda : kCpu; }

}  // namespace

MemoryStats AnalyzeMemory(const OpData& data, StepRange steps) {
  MemoryStats out;
  // Pass 1: the peak of each device over the recorded steps.
  std::map<DeviceKey, MemoryPeak> peaks;
  std::map<DeviceKey, size_t> peak_index;
  for (size_t i = 0; i < data.mem.size(); ++i) {
    const MemEvent& m = data.mem[i];
    if (!steps.Contains(m.step)) continue;
    const DeviceKey key{m.device_type, m.device_index};
    auto [it, added] = peaks.try_emplace(key);
    MemoryPeak& p = it->second;
    if (added) {
      p.device_type = m.device_type;
      p.device_index = m.device_index;
    }
    ++p.events;
    p.peak_reserved = std::max(p.peak_reserved, m.total_reserved);
    if (added || m.total_allocated > p.peak_allocated) {
      p.peak_allocated = m.total_allocated;
      p.t_ns = m.t_ns;
      p.step = m.step;
      peak_index[key] = i;
    }
  }

  // Where each step's backward pass began (its first autograd-engine operator).
  std::map<int64_t, int64_t> backward_begin;
  for (const OpEvent& e : data.ops) {
    if (!e.backward || !steps.Contains(e.step)) continue;
    auto [it, added] = backward_begin.try_emplace(e.step, e.begin_ns);
    if (!added) it->second = std::min(it->second, e.begin_ns);
  }

  // Pass 2: replay every observed event (warm-up steps too, so blocks allocated then are known)
  // and look at the live blocks at each peak and at each backward start.
  std::map<DeviceKey, std::unordered_map<uint64_t, Live>> live;
  auto take_live_by_op = [&](const DeviceKey& key, MemoryPeak& p) {
    std::unordered_map<uint32_t, int64_t> by_op;
    int64_t known = 0;
    for (const auto& [ptr, l] : live[key]) {
      by_op[l.op] += l.bytes;
      known += l.bytes;
    }
    for (const auto& [op, bytes] : by_op) {
      p.live_by_op.emplace_back(op == MemEvent::kNoOp ? "(outside any operator)" : data.names[op],
                                bytes);
    }
    if (p.peak_allocated > known) {
      p.live_by_op.emplace_back("(allocated before the observer)", p.peak_allocated - known);
    }
    std::ranges::sort(p.live_by_op, [](const auto& a, const auto& b) {
      return a.second != b.second ? a.second > b.second : a.first < b.first;
    });
  };
  auto activation_at = [&](int64_t step) {
    for (int dc = 0; dc < kDeviceClasses; ++dc) {
      int64_t bytes = 0;
      bool seen = false;
      for (const auto& [key, blocks] : live) {
        if (DeviceClassOf(key.first) != dc) continue;
        seen = true;
        for (const auto& [ptr, l] : blocks) {
          if (l.step == step) bytes += l.bytes;
        }
      }
      if (seen) out.activations.push_back({step, dc, bytes});
    }
  };
  auto next_backward = backward_begin.begin();
  for (size_t i = 0; i < data.mem.size(); ++i) {
    const MemEvent& m = data.mem[i];
    while (next_backward != backward_begin.end() && next_backward->second <= m.t_ns) {
      activation_at(next_backward->first);
      ++next_backward;
    }
    const DeviceKey key{m.device_type, m.device_index};
    auto& blocks = live[key];
    if (m.bytes > 0) {
      blocks[m.ptr] = {m.bytes, m.op, m.step};
    } else {
      blocks.erase(m.ptr);
    }
    auto pi = peak_index.find(key);
    if (pi != peak_index.end() && pi->second == i) take_live_by_op(key, peaks[key]);
  }
  for (; next_backward != backward_begin.end(); ++next_backward)
    activation_at(next_backward->first);

  for (auto& [key, p] : peaks) out.peaks.push_back(std::move(p));
  return out;
}

}  // namespace trainprof::torchlib
