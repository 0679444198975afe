#include "analysis/key_averages.h"

#include <unordered_map>

#include "analysis/memory_view.h"

namespace trainprof::analysis {
namespace {

using trace::EventKind;

// A row of the table: an operator call, or a runtime or driver call (torch.profiler lists
// cudaLaunchKernel and the like as rows of their own; the op tree takes their time out of the
// operator around them).
bool IsRow(EventKind k) {
  return k == EventKind::kCpuOp || k == EventKind::kRuntime || k == EventKind::kDriver;
}

// Each call's own figures before they are grouped: the tree's times and the memory inside it,
// by event index. A runtime call is no node of the tree: all of its time is its own.
struct CallFigures {
  int64_t self_ns = 0, self_device_ns = 0, device_total_ns = 0;
  int64_t self_alloc[2] = {0, 0}, self_freed[2] = {0, 0}, total_net[2] = {0, 0};
};

std::vector<CallFigures> FiguresByEvent(const trace::TraceModel& m, const OpTree& t) {
  std::vector<CallFigures> by(m.size());
  for (size_t i = 0; i < m.size(); ++i)
    if (m.kind[i] != EventKind::kCpuOp) by[i].self_ns = m.dur_ns[i];
  for (size_t k = 0; k < t.nodes.size(); ++k) {
    const uint32_t e = t.nodes[k].event;
    if (m.kind[e] == EventKind::kCpuOp)
      by[e] = {t.host_self_ns[k], t.device_self_ns[k], t.device_total_ns[k]};
  }
  ForEachMemoryEventStack(m, [&](size_t i, const std::vector<uint32_t>& stack) {
    const trace::MemoryEvent& ev = m.memory_events[i];
    const int c = ev.device_type == 1 ? 1 : 0;  // CUDA (and HIP, which PyTorch calls CUDA)
    CallFigures& own = by[stack.back()];
    (ev.bytes > 0 ? own.self_alloc[c] : own.self_freed[c]) += ev.bytes > 0 ? ev.bytes : -ev.bytes;
    for (uint32_t op : stack) by[op].total_net[c] += ev.bytes;
  });
  return by;
}

void Add(KeyAverage& r, int64_t dur_ns, const CallFigures& f) {
  ++r.calls;
  r.total_ns += dur_ns;
  r.self_ns += f.self_ns;
  r.self_device_ns += f.self_device_ns;
  r.device_total_ns += f.device_total_ns;
  for (int c = 0; c < 2; ++c) {
    r.self_alloc[c] += f.self_alloc[c];
    r.self_freed[c] += f.self_freed[c];
    r.total_net[c] += f.total_net[c];
  }
}

}  // namespace

std::vector<KeyAverage> KeyAverages(const trace::TraceModel& m, const OpTree& t, bool by_shapes,
                                    const std::vector<bool>* counted) {
  const std::vector<CallFigures> figures = FiguresByEvent(m, t);
  std::vector<KeyAverage> rows;
  std::unordered_map<uint64_t, size_t> index;  // (name << 32 | Input Dims) -> row
  for (size_t i = 0; i < m.size(); ++i) {
    if (!IsRow(m.kind[i]) || (counted != nullptr && !(*counted)[i])) continue;
    const trace::OpInputs* in = by_shapes ? m.InputsOf(i) : nullptr;
    const uint32_t dims = in != nullptr ? in->dims : trace::kNoName;
    auto [it, added] = index.emplace((uint64_t{m.name[i]} << 32) | dims, rows.size());
    if (added) {
      rows.push_back(
          {.name = m.name_of(i), .shapes = dims != trace::kNoName ? m.names[dims] : std::string()});
    }
    Add(rows[it->second], m.dur_ns[i], figures[i]);
  }
  return rows;
}

}  // namespace trainprof::analysis
