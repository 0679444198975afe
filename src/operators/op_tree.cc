#include "operators/op_tree.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <unordered_map>

namespace trainprof::torchlib {
namespace {

struct StepRangeNs {
  int64_t begin_ns, end_ns, step;
};

// "ProfilerStep#N" is step N; torch.profiler's events() rename every step "ProfilerStep*", and
// those are numbered in time order from `first_step`.
std::vector<StepRangeNs> ProfilerSteps(const std::vector<TreeOp>& calls, int64_t first_step) {
  constexpr std::string_view kPrefix = "ProfilerStep#";
  std::vector<StepRangeNs> steps, unnumbered;
  for (const TreeOp& c : calls) {
    if (c.name == "ProfilerStep*") unnumbered.push_back({c.begin_ns, c.end_ns, 0});
    if (!c.name.starts_with(kPrefix)) continue;
    int64_t n = 0;
    const char* first = c.name.data() + kPrefix.size();
    const char* last = c.name.data() + c.name.size();
    if (std::from_chars(first, last, n).ptr == last) steps.push_back({c.begin_ns, c.end_ns, n});
  }
  auto by_begin = [](const StepRangeNs& a, const StepRangeNs& b) {
    return a.begin_ns < b.begin_ns;
  };
  std::sort(unnumbered.begin(), unnumbered.end(), by_begin);
  for (size_t i = 0; i < unnumbered.size(); ++i) {
    unnumbered[i].step = first_step + static_cast<int64_t>(i);
    steps.push_back(unnumbered[i]);
  }
  std::sort(steps.begin(), steps.end(), by_begin);
  return steps;
}

int64_t StepOf(const std::vector<StepRangeNs>& steps, int64_t t, int64_t outside) {
  auto it = std::upper_bound(steps.begin(), steps.end(), t,
                             [](int64_t v, const StepRangeNs& s) { return v < s.begin_ns; });
  if (it == steps.begin()) return outside;
  --it;
  return t < it->end_ns ? it->step : outside;
}

Status CheckParents(const std::vector<TreeOp>& calls) {
  const auto n = static_cast<int64_t>(calls.size());
  for (int64_t i = 0; i < n; ++i) {
    const TreeOp& c = calls[i];
    if (c.end_ns < c.begin_ns) {
      return InvalidArgument(fmt::format("operator call {} ({}) ends before it begins", i, c.name));
    }
    if (c.parent == -1) continue;
    if (c.parent < 0 || c.parent >= n || c.parent == i) {
      return InvalidArgument(
          fmt::format("operator call {} ({}) has parent {}, not a call", i, c.name, c.parent));
    }
  }
  return Status::Ok();
}

// Depth by walking up; a cycle (a corrupt tree) is cut at the number of calls.
uint32_t DepthOf(const std::vector<TreeOp>& calls, int64_t i) {
  uint32_t depth = 0;
  for (int64_t p = calls[i].parent; p >= 0 && depth < calls.size(); p = calls[p].parent) ++depth;
  return depth;
}

}  // namespace

StatusOr<OpData> OpDataFromTree(const std::vector<TreeOp>& calls, int64_t first_step) {
  TRAINPROF_RETURN_IF_ERROR(CheckParents(calls));
  const std::vector<StepRangeNs> steps = ProfilerSteps(calls, first_step);
  OpData d;
  d.shapes.push_back("");
  std::unordered_map<std::string, uint32_t> names, shapes;
  auto intern = [](std::unordered_map<std::string, uint32_t>& index,
                   std::vector<std::string>& table, const std::string& s) {
    auto [it, added] = index.emplace(s, static_cast<uint32_t>(table.size()));
    if (added) table.push_back(s);
    return it->second;
  };
  shapes.emplace("", 0);
  d.ops.resize(calls.size());
  for (size_t i = 0; i < calls.size(); ++i) {
    const TreeOp& c = calls[i];
    OpEvent& e = d.ops[i];
    e.begin_ns = c.begin_ns;
    e.dur_ns = c.end_ns - c.begin_ns;
    e.self_ns = e.dur_ns;
    e.tid = c.tid;
    e.name = intern(names, d.names, c.name);
    e.shapes = intern(shapes, d.shapes, c.shapes);
    e.depth = DepthOf(calls, static_cast<int64_t>(i));
    e.step = StepOf(steps, c.begin_ns, first_step);
    e.total_net[kCpu] = c.cpu_net;
    e.total_net[kCuda] = c.cuda_net;
    e.self_device_ns = c.kernels_ns;
  }
  // Children subtract from their parent's self figures; device time adds up the tree, deepest
  // calls first so each parent sees its children's totals.
  std::vector<int64_t> self_net[kDeviceClasses];
  for (int k = 0; k < kDeviceClasses; ++k) {
    self_net[k].resize(calls.size());
    for (size_t i = 0; i < calls.size(); ++i) self_net[k][i] = d.ops[i].total_net[k];
  }
  std::vector<size_t> order(calls.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return d.ops[a].depth > d.ops[b].depth; });
  for (OpEvent& e : d.ops) e.device_ns = e.self_device_ns;
  for (size_t i : order) {
    const int64_t p = calls[i].parent;
    if (p < 0) continue;
    d.ops[p].self_ns -= d.ops[i].dur_ns;
    d.ops[p].device_ns += d.ops[i].device_ns;
    for (int k = 0; k < kDeviceClasses; ++k) self_net[k][p] -= d.ops[i].total_net[k];
  }
  for (size_t i = 0; i < calls.size(); ++i) {
    for (int k = 0; k < kDeviceClasses; ++k) {
      d.ops[i].self_alloc[k] = std::max<int64_t>(self_net[k][i], 0);
      d.ops[i].self_freed[k] = std::max<int64_t>(-self_net[k][i], 0);
    }
  }
  std::stable_sort(d.ops.begin(), d.ops.end(),
                   [](const OpEvent& a, const OpEvent& b) { return a.begin_ns < b.begin_ns; });
  return d;
}

}  // namespace trainprof::torchlib
