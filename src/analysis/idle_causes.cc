#include "analysis/idle_causes.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <utility>

#include "analysis/intervals.h"
#include "analysis/phase_view.h"

namespace trainprof::analysis {

using trace::EventKind;

namespace {

// A call that blocks the host until the GPU has caught up.
bool BlocksHostUntilGpu(std::string_view n) {
  return n.find("Synchronize") != std::string_view::npos ||
         n.find("MemcpyWithStream") != std::string_view::npos || n == "cudaMemcpy" ||
         n == "hipMemcpy" || n == "cuMemcpyDtoH" || n == "cuMemcpyDtoH_v2" ||
         n == "cuCtxSynchronize";
}

// The cause each host event stands for (-1: none), cached per name: a name's events are all of
// one kind but for a few (a range written as cpu_op in one trace, user_annotation in another),
// so the cache is per name and kind group (API call, or range).
class HostCauses {
 public:
  HostCauses(const trace::TraceModel& m, const std::vector<std::string>& loader,
             const std::vector<std::string>& steps_from)
      : m_(m), loader_(loader), steps_from_(steps_from), cache_(2 * m.names.size(), kUnknown) {}

  int Of(size_t i) {
    const EventKind k = m_.kind[i];
    const bool call = k == EventKind::kRuntime || k == EventKind::kDriver;
    if (!call && k != EventKind::kCpuOp && k != EventKind::kUserAnnotation &&
        k != EventKind::kPythonFunction)
      return -1;
    int8_t& c = cache_[2 * m_.name[i] + (k == EventKind::kCpuOp ? 1 : 0)];
    if (c == kUnknown) c = static_cast<int8_t>(Compute(i, call));
    return c;
  }

 private:
  static constexpr int8_t kUnknown = -2;
  int Compute(size_t i, bool call) const {
    const std::string& n = m_.name_of(i);
    if (call) return BlocksHostUntilGpu(n) ? kIdleSync : kIdleLaunch;
    if (IsDataLoaderName(n, loader_)) return kIdleDataLoader;
    return m_.kind[i] == EventKind::kCpuOp && StepNumber(n, steps_from_, 0) < 0 ? kIdleCpuOps : -1;
  }
  const trace::TraceModel& m_;
  const std::vector<std::string>& loader_;
  const std::vector<std::string>& steps_from_;
  std::vector<int8_t> cache_;
};

// What the host threads were doing, per cause but the last, each a union of intervals.
std::array<Intervals, kIdleElsewhere> HostActivity(const trace::TraceModel& m, HostCauses& causes) {
  std::array<Intervals, kIdleElsewhere> out;
  for (size_t i = 0; i < m.size(); ++i) {
    const int c = causes.Of(i);
    if (c >= 0) AppendForUnion(out[static_cast<size_t>(c)], {m.ts_ns[i], m.end_ns(i)});
  }
  for (Intervals& v : out) v = Union(std::move(v));
  return out;
}

// Each GPU's busy time (kernels, copies, sets), a union per device, and the resolution of the
// GPU events' times: 1,000 ns when every start and duration is a whole microsecond (Kineto
// before 2023, HTA's rounding), else 1 ns.
std::map<int64_t, Intervals> GpuBusy(const trace::TraceModel& m, int64_t* resolution_ns) {
  std::map<int64_t, Intervals> out;
  bool whole_us = true;
  for (size_t i = 0; i < m.size(); ++i) {
    if (!trace::IsGpuKind(m.kind[i])) continue;
    AppendForUnion(out[m.device_of(i)], {m.ts_ns[i], m.end_ns(i)});
    whole_us = whole_us && m.ts_ns[i] % 1000 == 0 && m.dur_ns[i] % 1000 == 0;
  }
  for (auto& [dev, v] : out) v = Union(std::move(v));
  *resolution_ns = whole_us ? 1000 : 1;
  return out;
}

// Blame's buffers, kept from one gap to the next: a trace has thousands of gaps.
struct BlameScratch {
  Intervals left, near, held, rest;
};

// `gap`'s time by cause: each part to the first cause whose host activity holds it.
std::array<int64_t, kIdleCauses> Blame(const Interval& gap,
                                       const std::array<Intervals, kIdleElsewhere>& host,
                                       BlameScratch& s) {
  std::array<int64_t, kIdleCauses> ns{};
  s.left.assign(1, gap);
  for (int c = 0; c < kIdleElsewhere && !s.left.empty(); ++c) {
    // Within: a rank has a million host intervals and thousands of gaps.
    WithinInto(host[static_cast<size_t>(c)], gap.begin, gap.end, &s.near);
    IntersectInto(s.left, s.near, &s.held);
    ns[static_cast<size_t>(c)] = Length(s.held);
    SubtractInto(s.left, s.held, &s.rest);
    std::swap(s.left, s.rest);
  }
  ns[kIdleElsewhere] = Length(s.left);
  return ns;
}

// The longest kLargestGaps of `gaps`, longest first (ties: the earlier first).
void KeepLongest(std::vector<IdleGap>& gaps) {
  auto longer = [](const IdleGap& a, const IdleGap& b) {
    return a.dur_ns() != b.dur_ns() ? a.dur_ns() > b.dur_ns() : a.begin_ns < b.begin_ns;
  };
  const size_t keep = std::min(gaps.size(), kLargestGaps);
  std::partial_sort(gaps.begin(), gaps.begin() + static_cast<long>(keep), gaps.end(), longer);
  gaps.resize(keep);
}

// Each gap's host range: of its cause, the one that overlaps it most. One pass over the events
// for the few gaps kept.
void NameHostRanges(const trace::TraceModel& m, std::vector<IdleGap>& gaps, HostCauses& causes) {
  std::vector<int64_t> best(gaps.size(), 0);
  for (size_t i = 0; i < m.size() && !gaps.empty(); ++i) {
    const int cause = causes.Of(i);
    if (cause < 0) continue;
    for (size_t g = 0; g < gaps.size(); ++g) {
      if (cause != gaps[g].cause) continue;
      const int64_t overlap =
          std::min(m.end_ns(i), gaps[g].end_ns) - std::max(m.ts_ns[i], gaps[g].begin_ns);
      if (overlap <= best[g]) continue;
      best[g] = overlap;
      gaps[g].host = m.name_of(i);
    }
  }
}

}  // namespace

const char* IdleCauseName(int cause) {
  static constexpr const char* kNames[] = {"data loader", "synchronisation", "launch calls",
                                           "CPU operators", "between operators"};
  return kNames[cause];
}

int IdleCauses::Largest() const {
  return static_cast<int>(std::max_element(ns.begin(), ns.end()) - ns.begin());
}

IdleCauses ComputeIdleCauses(const trace::TraceModel& m, const StepsResult& steps,
                             const std::vector<std::string>& dataloader_patterns,
                             const std::vector<std::string>& steps_from) {
  IdleCauses out;
  Intervals window;
  for (const Step& s : steps.steps) window.push_back({s.begin_ns, s.end_ns});
  window = Union(std::move(window));
  HostCauses causes(m, dataloader_patterns, steps_from);
  const auto host = HostActivity(m, causes);
  int64_t resolution_ns = 1;
  BlameScratch scratch;
  for (const auto& [dev, busy] : GpuBusy(m, &resolution_ns)) {
    for (const Interval& gap : Subtract(window, busy)) {
      // A gap of one tick is the rounding of two adjacent events' times, not idle time.
      if (gap.end - gap.begin <= resolution_ns) continue;
      const std::array<int64_t, kIdleCauses> ns = Blame(gap, host, scratch);
      for (size_t c = 0; c < ns.size(); ++c) out.ns[c] += ns[c];
      out.idle_ns += gap.end - gap.begin;
      const int cause = static_cast<int>(std::max_element(ns.begin(), ns.end()) - ns.begin());
      out.largest.push_back({dev, gap.begin, gap.end, cause});
      if (out.largest.size() >= 8 * kLargestGaps) KeepLongest(out.largest);
    }
  }
  KeepLongest(out.largest);
  NameHostRanges(m, out.largest, causes);
  return out;
}

}  // namespace trainprof::analysis
