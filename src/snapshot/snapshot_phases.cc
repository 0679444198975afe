// Memory per annotation and per step, what steps left behind, the allocator's end state, and
// AnalyzeSnapshot, which runs every view per device.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <unordered_map>

#include "snapshot/snapshot_analysis.h"
#include "snapshot/snapshot_internal.h"

namespace trainprof::snapshot {
namespace {

// Overlapping intervals of one name are one: two markers of the same step (torch.profiler's
// ProfilerStep#N and trainprof's own around it) must not make it two steps. `sorted` by start.
std::vector<Interval> MergeSameName(std::vector<Interval> sorted) {
  std::vector<Interval> out;
  std::unordered_map<uint32_t, size_t> last;  // name -> its latest interval in `out`
  for (const Interval& iv : sorted) {
    auto it = last.find(iv.name);
    if (it != last.end() && iv.start <= out[it->second].end) {
      out[it->second].end = std::max(out[it->second].end, iv.end);
      continue;
    }
    last[iv.name] = out.size();
    out.push_back(iv);
  }
  return out;
}

}  // namespace

std::vector<Interval> Intervals(const SnapshotModel& m, int64_t device, int64_t last_us) {
  std::vector<Annotation> as;
  for (const Annotation& a : m.annotations)
    if (a.device == device || a.device < 0) as.push_back(a);
  std::stable_sort(as.begin(), as.end(),
                   [](const Annotation& a, const Annotation& b) { return a.time_us < b.time_us; });
  std::unordered_map<uint32_t, std::vector<int64_t>> open;
  std::vector<Interval> out;
  for (const Annotation& a : as) {
    std::vector<int64_t>& starts = open[a.name];
    if (a.start) {
      starts.push_back(a.time_us);
    } else if (!starts.empty()) {
      out.push_back({starts.back(), a.time_us, a.name});
      starts.pop_back();
    }
  }
  for (const auto& [name, starts] : open)
    for (int64_t s : starts) out.push_back({s, std::max(s, last_us), name});
  std::sort(out.begin(), out.end(), [](const Interval& a, const Interval& b) {
    return a.start != b.start ? a.start < b.start : a.name < b.name;
  });
  return MergeSameName(std::move(out));
}

bool InWindow(int64_t t, const SnapshotOptions& o, int64_t t0) {
  const int64_t rel = t - t0;
  return rel >= o.from_us && rel <= o.to_us;
}

namespace {

// Allocated before, at the end of, and at most during [start, end]; bytes allocated in it.
struct Span {
  int64_t before = 0, end = 0, peak = 0, allocated = 0;
};

Span Measure(const DeviceMemory& d, const Replay& r, int64_t start, int64_t end) {
  const auto& c = d.curve;
  auto lo = std::lower_bound(c.begin(), c.end(), start,
                             [](const CurvePoint& p, int64_t t) { return p.time_us < t; });
  auto hi = std::upper_bound(c.begin(), c.end(), end,
                             [](int64_t t, const CurvePoint& p) { return t < p.time_us; });
  if (hi < lo) hi = lo;
  Span s;
  s.before = lo == c.begin() ? d.before_history_allocated : (lo - 1)->allocated;
  s.end = hi == lo ? s.before : (hi - 1)->allocated;
  s.peak = s.before;
  for (auto it = lo; it != hi; ++it) s.peak = std::max(s.peak, it->allocated);
  s.allocated = r.alloc_prefix[hi - c.begin()] - r.alloc_prefix[lo - c.begin()];
  return s;
}

// Steps are one row of the annotation table ("ProfilerStep#*"); their own table has each.
std::string PhaseName(std::string_view name) {
  if (!IsStepName(name)) return std::string(name);
  while (!name.empty() && std::isdigit(static_cast<unsigned char>(name.back())))
    name.remove_suffix(1);
  return fmt::format("{}*", name);
}

}  // namespace

void Phases(const SnapshotModel& m, const std::vector<TraceEvent>& ev, const Replay& r,
            const SnapshotOptions& o, int64_t t0, DeviceMemory& d) {
  const int64_t last = ev.empty() ? 0 : ev.back().time_us;
  std::map<std::string, PhaseMemory> by;
  for (const Interval& iv : Intervals(m, d.device, last)) {
    if (!InWindow(iv.start, o, t0)) continue;
    const Span s = Measure(d, r, iv.start, iv.end);
    const std::string name = PhaseName(m.Str(iv.name));
    PhaseMemory& p = by[name];
    p.name = name;
    ++p.instances;
    p.allocated_bytes += s.allocated;
    p.net_bytes += s.end - s.before;
    p.peak = std::max(p.peak, s.peak);
  }
  for (auto& [name, p] : by) d.phases.push_back(std::move(p));
  std::sort(d.phases.begin(), d.phases.end(), [](const PhaseMemory& a, const PhaseMemory& b) {
    return a.peak != b.peak ? a.peak > b.peak : a.name < b.name;
  });
}

namespace {

// The step (index into `steps`) whose span holds t, or -1.
int StepAt(const std::vector<StepMemory>& steps, int64_t t) {
  auto it = std::upper_bound(steps.begin(), steps.end(), t,
                             [](int64_t v, const StepMemory& s) { return v < s.start_us; });
  if (it == steps.begin()) return -1;
  --it;
  return t <= it->end_us ? static_cast<int>(it - steps.begin()) : -1;
}

struct Growth {
  std::unordered_map<std::string, StackBytes> by;
  std::unordered_map<std::string, int> last_step;
  void Add(const std::string& label, int step, int64_t size) {
    StackBytes& s = by[label];
    s.stack = label;
    s.bytes += size;
    ++s.blocks;
    auto [it, added] = last_step.emplace(label, step);
    if (added || it->second != step) ++s.steps;
    it->second = step;
  }
};

}  // namespace

void Steps(const SnapshotModel& m, const std::vector<TraceEvent>& ev, const Replay& r,
           const SnapshotOptions& o, int64_t t0, DeviceMemory& d, Labels& labels) {
  const int64_t last = ev.empty() ? 0 : ev.back().time_us;
  for (const Interval& iv : Intervals(m, d.device, last)) {
    if (!IsStepName(m.Str(iv.name)) || !InWindow(iv.start, o, t0)) continue;
    const Span s = Measure(d, r, iv.start, iv.end);
    d.steps.push_back({std::string(m.Str(iv.name)), iv.start, iv.end, s.before, s.end, s.peak, 0});
  }
  if (d.steps.empty()) return;
  d.steps.back().left_bytes = -1;  // no next step to judge it by
  const int n = static_cast<int>(d.steps.size());
  Growth g;  // in the order blocks were made, so a stack's steps come in order
  for (const memory::Block& b : r.log.blocks) {
    if (b.alloc_seq == memory::kBefore) continue;
    const int k = StepAt(d.steps, b.alloc_time);
    if (k < 0 || k + 1 >= n) continue;
    if (b.free_seq != memory::kNever && b.free_time <= d.steps[k + 1].end_us) continue;
    d.steps[k].left_bytes += b.bytes;
    g.Add(labels.Of(b.stack), k, b.bytes);
  }
  d.growth = SortedBySize(g.by);
}

void Pools(const SnapshotModel& m, DeviceMemory& d) {
  std::map<std::string, PoolState> by;
  for (const Segment& s : m.segments) {
    if (s.device != d.device) continue;
    const std::string name =
        fmt::format("{}{}", s.private_pool ? "private " : "", m.Str(s.segment_type));
    PoolState& p = by[name];
    p.pool = name;
    ++p.segments;
    p.expandable += s.expandable ? 1 : 0;
    p.reserved += s.total_size;
    for (const SegmentBlock& b : s.blocks) {
      const std::string_view state = m.Str(b.state);
      if (state == "active_allocated") p.allocated += b.size;
      if (state != "inactive" || s.blocks.size() < 2) continue;
      ++p.inactive_split_blocks;
      p.inactive_split_bytes += b.size;
      p.largest_inactive = std::max(p.largest_inactive, b.size);
    }
  }
  for (auto& [name, p] : by) d.pools.push_back(std::move(p));
}

bool IsStepName(std::string_view name) {
  if (name.rfind("ProfilerStep", 0) == 0) return true;
  std::string s;
  for (char c : name) s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (s.rfind("train_", 0) == 0) s = s.substr(6);
  if (s.rfind("step", 0) != 0) return false;
  size_t i = 4;
  if (i < s.size() && (s[i] == ' ' || s[i] == '_' || s[i] == '#' || s[i] == '-')) ++i;
  if (i == s.size()) return false;
  for (; i < s.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  return true;
}

namespace {

// The recorder's and the allocator's own frames, which every C++ stack starts with.
bool IsPlumbing(std::string_view name) {
  static constexpr std::string_view kPrefixes[] = {
      "torch::unwind::",
      "torch::CapturedTraceback::",
      "torch::cuda::(anonymous namespace)::gather",
      "c10::cuda::CUDACachingAllocator::",
      "at::TensorBase at::detail::_empty",
      "at::detail::empty",
      "unwind",
  };
  for (std::string_view p : kPrefixes)
    if (name.starts_with(p)) return true;
  return false;
}

bool IsAutogradNode(std::string_view name) {
  return name.find("autograd::generated::") != std::string_view::npos ||
         name.find("AccumulateGrad") != std::string_view::npos;
}

// Where a C++-only stack's meaningful frames begin: its autograd node, or past the plumbing.
const uint32_t* FirstMeaningful(const SnapshotModel& m, uint32_t stack) {
  const uint32_t* begin = m.StackBegin(stack);
  const uint32_t* end = m.StackEnd(stack);
  for (const uint32_t* f = begin; f != end; ++f)
    if (IsAutogradNode(m.Str(m.frames[*f].name))) return f;
  const uint32_t* f = begin;
  while (f != end && IsPlumbing(m.Str(m.frames[*f].name))) ++f;
  return f == end ? begin : f;
}

// "at::native::foo(at::Tensor const&)" -> "at::native::foo".
std::string_view WithoutArguments(std::string_view name) {
  const size_t paren = name.find('(');
  return paren == std::string_view::npos || paren == 0 ? name : name.substr(0, paren);
}

}  // namespace

std::string StackLabel(const SnapshotModel& m, uint32_t stack, size_t max_frames) {
  if (stack == 0 || stack >= m.stacks()) return "(no stack recorded)";
  std::string out;
  size_t python = 0, cpp = 0, shown = 0;
  for (const uint32_t* f = m.StackBegin(stack); f != m.StackEnd(stack); ++f)
    (m.frames[*f].python ? python : cpp) += 1;
  const uint32_t* first = python > 0 ? m.StackBegin(stack) : FirstMeaningful(m, stack);
  const size_t skipped = static_cast<size_t>(first - m.StackBegin(stack));
  for (const uint32_t* f = first; f != m.StackEnd(stack); ++f) {
    const Frame& fr = m.frames[*f];
    if (fr.python != (python > 0) || shown == max_frames) continue;
    std::string_view file = m.Str(fr.filename);
    if (size_t slash = file.rfind('/'); slash != std::string_view::npos)
      file.remove_prefix(slash + 1);
    const std::string_view name = fr.python ? m.Str(fr.name) : WithoutArguments(m.Str(fr.name));
    out += fmt::format("{}{}", shown ? " <- " : "", name);
    if (fr.python && !file.empty()) out += fmt::format(" ({}:{})", file, fr.line);
    ++shown;
  }
  const size_t hidden = (python > 0 ? python : cpp) - shown - (python > 0 ? 0 : skipped);
  if (hidden > 0) out += fmt::format(" <- ... {} more", hidden);
  if (python > 0 && cpp > 0) out += fmt::format(" [+{} C++ frames]", cpp);
  if (python == 0 && skipped > 0) out += fmt::format(" [+{} allocator frames]", skipped);
  return out;
}

std::vector<DeviceMemory> AnalyzeSnapshot(const SnapshotModel& m, const SnapshotOptions& o) {
  std::map<int64_t, const std::vector<TraceEvent>*> devices;
  static const std::vector<TraceEvent> kNone;
  for (const auto& [dev, ev] : m.traces) devices[dev] = &ev;
  for (const Segment& s : m.segments) devices.emplace(s.device, &kNone);
  int64_t t0 = std::numeric_limits<int64_t>::max();
  for (const auto& [dev, ev] : m.traces)
    if (!ev.empty()) t0 = std::min(t0, ev.front().time_us);
  if (t0 == std::numeric_limits<int64_t>::max()) t0 = 0;
  std::vector<DeviceMemory> out;
  for (const auto& [dev, evp] : devices) {
    const std::vector<TraceEvent>& ev = *evp;
    DeviceMemory& d = out.emplace_back();
    d.device = dev;
    Labels labels(m);
    Replay r;
    r.Run(m, ev, d, labels);
    MatchEnd(m, d, r);
    size_t lo = 0, hi = ev.size(), peak = ev.size();
    while (lo < hi && ev[lo].time_us - t0 < o.from_us) ++lo;
    while (hi > lo && ev[hi - 1].time_us - t0 > o.to_us) --hi;
    d.events = static_cast<int64_t>(hi - lo);
    for (size_t i = lo; i < hi; ++i) {
      if (peak == ev.size() || d.curve[i].allocated > d.curve[peak].allocated) peak = i;
      d.peak_reserved = std::max(d.peak_reserved, d.curve[i].reserved);
    }
    if (peak < ev.size()) {
      d.first_us = ev[lo].time_us - t0;
      d.last_us = ev[hi - 1].time_us - t0;
      d.peak_allocated = d.curve[peak].allocated;
      d.peak_time_us = ev[peak].time_us - t0;
      LiveAtPeak(r, peak, d, labels, o.top);
      for (Allocation& a : d.top_allocations) a.time_us -= t0;
    }
    for (OomEvent oom : r.ooms) {
      if (!InWindow(oom.time_us, o, t0)) continue;
      oom.allocated += d.before_history_allocated;
      oom.reserved += d.before_history_reserved;
      oom.time_us -= t0;
      d.ooms.push_back(oom);
    }
    Phases(m, ev, r, o, t0, d);
    Steps(m, ev, r, o, t0, d, labels);
    Roles(m, r, peak, o, t0, d);
    Pools(m, d);
    for (StepMemory& s : d.steps) s.start_us -= t0, s.end_us -= t0;
    d.curve.erase(d.curve.begin() + static_cast<std::ptrdiff_t>(hi), d.curve.end());
    d.curve.erase(d.curve.begin(), d.curve.begin() + static_cast<std::ptrdiff_t>(lo));
    for (CurvePoint& p : d.curve) p.time_us -= t0;
  }
  return out;
}

}  // namespace trainprof::snapshot
