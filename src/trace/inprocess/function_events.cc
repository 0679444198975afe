#include "trace/inprocess/function_events.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <unordered_map>

namespace trainprof::trace {
namespace {

using torchlib::MemEvent;
using torchlib::OpData;
using torchlib::OpEvent;

struct StepRangeNs {
  int64_t begin_ns, end_ns, step;
  size_t call;
};

// "ProfilerStep#N" is step N; torch.profiler's events() rename every step "ProfilerStep*", and
// those are numbered in time order from `first_step`.
std::vector<StepRangeNs> ProfilerSteps(const std::vector<FunctionEvent>& calls,
                                       int64_t first_step) {
  constexpr std::string_view kPrefix = "ProfilerStep#";
  std::vector<StepRangeNs> steps, unnumbered;
  for (size_t i = 0; i < calls.size(); ++i) {
    const FunctionEvent& c = calls[i];
    if (c.name == "ProfilerStep*") unnumbered.push_back({c.begin_ns, c.end_ns, 0, i});
    if (!c.name.starts_with(kPrefix)) continue;
    int64_t n = 0;
    const char* first = c.name.data() + kPrefix.size();
    const char* last = c.name.data() + c.name.size();
    if (std::from_chars(first, last, n).ptr == last) steps.push_back({c.begin_ns, c.end_ns, n, i});
  }
  auto by_begin = [](const StepRangeNs& a, const StepRangeNs& b) {
    return a.begin_ns < b.begin_ns;
  };
  std::ranges::sort(unnumbered, by_begin);
  for (size_t i = 0; i < unnumbered.size(); ++i) {
    unnumbered[i].step = first_step + static_cast<int64_t>(i);
    steps.push_back(unnumbered[i]);
  }
  std::ranges::sort(steps, by_begin);
  return steps;
}

int64_t StepOf(const std::vector<StepRangeNs>& steps, int64_t t, int64_t outside) {
  auto it = std::upper_bound(steps.begin(), steps.end(), t,
                             [](int64_t v, const StepRangeNs& s) { return v < s.begin_ns; });
  if (it == steps.begin()) return outside;
  --it;
  return t < it->end_ns ? it->step : outside;
}

Status CheckTimes(const std::vector<FunctionEvent>& calls) {
  for (size_t i = 0; i < calls.size(); ++i) {
    if (calls[i].end_ns < calls[i].begin_ns) {
      return InvalidArgument(
          fmt::format("operator call {} ({}) ends before it begins", i, calls[i].name));
    }
  }
  return Status::Ok();
}

// The calls' nesting by their times on each thread: a call is inside the innermost call that
// began no later and had not ended when it began (a 0 µs call at a call's end is inside it);
// equal begins nest the longer call outside, equal spans in the order torch lists them (the
// caller first). The legacy profiler's microsecond times can have a callee end 1 µs after its
// caller: it is still inside. torch's own parents are not used: they can make a callee its
// caller's sibling.
bool Inside(const FunctionEvent& c, const FunctionEvent& open) {
  return c.begin_ns < open.end_ns || (c.begin_ns == open.end_ns && c.end_ns == c.begin_ns);
}

struct Tree {
  std::vector<std::vector<size_t>> children;  // by begin
  std::vector<size_t> roots;                  // by thread, then begin
  std::vector<uint32_t> depth;
};
Tree NestByTime(const std::vector<FunctionEvent>& calls) {
  std::vector<size_t> order(calls.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::ranges::stable_sort(order, [&](size_t a, size_t b) {
    const FunctionEvent &x = calls[a], &y = calls[b];
    if (x.tid != y.tid) return x.tid < y.tid;
    return x.begin_ns != y.begin_ns ? x.begin_ns < y.begin_ns : x.end_ns > y.end_ns;
  });
  Tree t{std::vector<std::vector<size_t>>(calls.size()), {}, std::vector<uint32_t>(calls.size())};
  std::vector<size_t> open;
  for (size_t c : order) {
    // Close the outermost open call the new one is not inside, and every call within it.
    auto closed = std::ranges::find_if(open, [&](size_t o) {
      return calls[o].tid != calls[c].tid || !Inside(calls[c], calls[o]);
    });
    open.erase(closed, open.end());
    (open.empty() ? t.roots : t.children[open.back()]).push_back(c);
    t.depth[c] = static_cast<uint32_t>(open.size());
    open.push_back(c);
  }
  return t;
}

// torch's times are whole microseconds, so a call can begin with its caller, end as its sibling
// begins, or last 0 ns, and an instant would not say which call it is in. Walking each thread's
// tree depth first, every begin and end moves to at least 1 ns after the one before it: nesting
// becomes strict (a call begins before its callees and ends after them), times move by a few
// ns, and a call's begin is an instant of its own time.
struct Times {
  std::vector<int64_t> begin, end;
};
Times StrictlyNested(const std::vector<FunctionEvent>& calls, const Tree& tree) {
  Times t{std::vector<int64_t>(calls.size()), std::vector<int64_t>(calls.size())};
  std::unordered_map<int64_t, int64_t> last;     // per thread
  std::vector<std::pair<size_t, size_t>> stack;  // (call, its next callee)
  for (size_t root : tree.roots) {
    int64_t& prev = last.try_emplace(calls[root].tid, calls[root].begin_ns - 1).first->second;
    auto place = [&prev](int64_t v) { return prev = std::max(v, prev + 1); };
    t.begin[root] = place(calls[root].begin_ns);
    stack.emplace_back(root, 0);
    while (!stack.empty()) {
      auto& [c, next] = stack.back();
      if (next == tree.children[c].size()) {
        t.end[c] = place(calls[c].end_ns);
        stack.pop_back();
        continue;
      }
      const size_t k = tree.children[c][next++];
      t.begin[k] = place(calls[k].begin_ns);
      stack.emplace_back(k, 0);
    }
  }
  return t;
}

// One allocator report per call and device class whose own net bytes (torch's net less its
// callees') are not zero, at its begin.
void AddOwnBytes(const std::vector<FunctionEvent>& calls, const Tree& tree, OpData& d) {
  for (size_t i = 0; i < calls.size(); ++i) {
    int64_t own[2] = {calls[i].cpu_net, calls[i].cuda_net};
    for (size_t k : tree.children[i]) own[0] -= calls[k].cpu_net, own[1] -= calls[k].cuda_net;
    for (int16_t type = 0; type < 2; ++type) {
      if (own[type] == 0) continue;
      d.mem.push_back({.t_ns = d.ops[i].begin_ns,
                       .step = d.ops[i].step,
                       .bytes = own[type],
                       .device_type = type,
                       .device_index = static_cast<int16_t>(type == 0 ? -1 : 0),
                       .op = d.ops[i].name,
                       .tid = calls[i].tid});
    }
  }
  std::ranges::stable_sort(d.mem, {}, &MemEvent::t_ns);
  int64_t total[2] = {0, 0};
  for (MemEvent& m : d.mem) m.total_allocated = total[m.device_type] += m.bytes;
}

uint32_t Intern(std::unordered_map<std::string, uint32_t>& index, std::vector<std::string>& table,
                const std::string& s) {
  auto [it, added] = index.emplace(s, static_cast<uint32_t>(table.size()));
  if (added) table.push_back(s);
  return it->second;
}

}  // namespace

StatusOr<OpData> OpDataOfFunctionEvents(const std::vector<FunctionEvent>& calls,
                                        int64_t first_step) {
  TRAINPROF_RETURN_IF_ERROR(CheckTimes(calls));
  const std::vector<StepRangeNs> steps = ProfilerSteps(calls, first_step);
  std::vector<std::string> names(calls.size());
  for (size_t i = 0; i < calls.size(); ++i) names[i] = calls[i].name;
  for (const StepRangeNs& s : steps) names[s.call] = fmt::format("ProfilerStep#{}", s.step);
  const Tree tree = NestByTime(calls);
  const Times t = StrictlyNested(calls, tree);
  OpData d;
  d.shapes.push_back("");
  std::unordered_map<std::string, uint32_t> name_ids, shape_ids{{"", 0}};
  d.ops.resize(calls.size());
  for (size_t i = 0; i < calls.size(); ++i) {
    const FunctionEvent& c = calls[i];
    int64_t callees_ns = 0;
    for (size_t k : tree.children[i]) callees_ns += t.end[k] - t.begin[k];
    d.ops[i] = {.begin_ns = t.begin[i],
                .dur_ns = t.end[i] - t.begin[i],
                .self_ns = t.end[i] - t.begin[i] - callees_ns,
                .step = StepOf(steps, c.begin_ns, first_step),
                .tid = c.tid,
                .name = Intern(name_ids, d.names, names[i]),
                .shapes = Intern(shape_ids, d.shapes, c.shapes),
                .depth = tree.depth[i]};
  }
  AddOwnBytes(calls, tree, d);
  std::ranges::stable_sort(d.ops, {}, &OpEvent::begin_ns);
  return d;
}

}  // namespace trainprof::trace
