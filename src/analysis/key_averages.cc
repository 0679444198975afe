#include "analysis/key_averages.h"

#include <unordered_map>

#include "analysis/memory_view.h"
#include "analysis/steps.h"

namespace trainprof::analysis {
namespace {

using trace::EventKind;

// A row of the table: an operator call, or a runtime or driver call (torch.profiler lists
// cudaLaunchKernel and the like as rows of their own; the op tree takes their time out of the
// operator around them).
bool IsRow(EventKind k, bool annotations) {
  return k == EventKind::kCpuOp || k == EventKind::kRuntime || k == EventKind::kDriver ||
         (annotations && k == EventKind::kUserAnnotation);
}

// The calls of every "ProfilerStep#N" (a cpu_op in torch's legacy profiler) are one row,
// "ProfilerStep*", as torch.profiler's events() rename them: by name id, whether it is one.
constexpr uint32_t kStepRow = trace::kNoName - 1;
std::vector<bool> StepNames(const trace::TraceModel& m) {
  std::vector<bool> step(m.names.size());
  for (size_t n = 0; n < step.size(); ++n)
    step[n] = ProfilerStepNumber(m.names[static_cast<uint32_t>(n)]) >= 0;
  return step;
}

// The memory inside each call, per node of the tree.
struct CallMemory {
  int64_t self_alloc[2] = {0, 0}, self_freed[2] = {0, 0}, total_net[2] = {0, 0};
};

// Per event, its node in the tree (-1: none; every cpu_op is one).
std::vector<int32_t> NodeOfEvent(const trace::TraceModel& m, const OpTree& t) {
  std::vector<int32_t> node(m.size(), -1);
  for (size_t k = 0; k < t.nodes.size(); ++k) node[t.nodes[k].event] = static_cast<int32_t>(k);
  return node;
}

std::vector<CallMemory> MemoryByNode(const trace::TraceModel& m, const OpTree& t,
                                     const std::vector<int32_t>& node) {
  std::vector<CallMemory> by(t.nodes.size());
  ForEachMemoryEventStack(m, [&](size_t i, const std::vector<uint32_t>& stack) {
    const trace::MemoryEvent& ev = m.memory_events[i];
    const int c = ev.device_type == 1 ? 1 : 0;  // CUDA (and HIP, which PyTorch calls CUDA)
    if (const int32_t own = node[stack.back()]; own >= 0) {
      CallMemory& o = by[static_cast<size_t>(own)];
      (ev.bytes > 0 ? o.self_alloc[c] : o.self_freed[c]) += ev.bytes > 0 ? ev.bytes : -ev.bytes;
    }
    for (uint32_t op : stack)
      if (node[op] >= 0) by[static_cast<size_t>(node[op])].total_net[c] += ev.bytes;
  });
  return by;
}

// One call added to its row: a node's times and memory, or a runtime call's own time.
void Add(KeyAverage& r, const trace::TraceModel& m, size_t i, const OpTree& t, int32_t k,
         const std::vector<CallMemory>& memory) {
  ++r.calls;
  r.total_ns += m.dur_ns[i];
  if (k < 0) {
    r.self_ns += m.dur_ns[i];
    return;
  }
  const auto n = static_cast<size_t>(k);
  r.self_ns += t.host_self_ns[n];
  r.self_device_ns += t.device_self_ns[n];
  r.device_total_ns += t.device_total_ns[n];
  for (int c = 0; c < 2; ++c) {
    r.self_alloc[c] += memory[n].self_alloc[c];
    r.self_freed[c] += memory[n].self_freed[c];
    r.total_net[c] += memory[n].total_net[c];
  }
}

}  // namespace

std::vector<KeyAverage> KeyAverages(const trace::TraceModel& m, const OpTree& t, bool by_shapes,
                                    const std::vector<bool>* counted, bool annotations) {
  const std::vector<int32_t> node = NodeOfEvent(m, t);
  const std::vector<CallMemory> memory = MemoryByNode(m, t, node);
  std::vector<KeyAverage> rows;
  std::unordered_map<uint64_t, size_t> index;  // (name << 32 | Input Dims) -> row
  const std::vector<bool> step = StepNames(m);
  for (size_t i = 0; i < m.size(); ++i) {
    if (!IsRow(m.kind[i], annotations) || (counted != nullptr && !(*counted)[i])) continue;
    const trace::OpInputs* in = by_shapes ? m.InputsOf(i) : nullptr;
    const uint32_t dims = in != nullptr ? in->dims : trace::kNoName;
    const uint32_t name = step[m.name[i]] ? kStepRow : m.name[i];
    auto [it, added] = index.emplace((uint64_t{name} << 32) | dims, rows.size());
    if (added) {
      rows.push_back({.name = name == kStepRow ? "ProfilerStep*" : m.name_of(i),
                      .shapes = dims != trace::kNoName ? m.names[dims] : std::string()});
    }
    const int32_t k =
        m.kind[i] == EventKind::kRuntime || m.kind[i] == EventKind::kDriver ? -1 : node[i];
    Add(rows[it->second], m, i, t, k, memory);
  }
  return rows;
}

}  // namespace trainprof::analysis
