#include "analysis/steps.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <tuple>
#include <utility>

#include "analysis/kernel_class.h"
#include "base/radix_sort.h"

namespace trainprof::analysis {

using trace::EventKind;

int64_t ProfilerStepNumber(std::string_view name) {
  constexpr std::string_view kPrefix = "ProfilerStep#";
  if (name.substr(0, kPrefix.size()) != kPrefix) return -1;
  int64_t n = 0;
  size_t i = kPrefix.size();
  if (i == name.size()) return -1;
  for (; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9' || n > (int64_t{1} << 50)) return -1;
    n = n * 10 + (name[i] - '0');
  }
  return n;
}

int64_t StepNumber(std::string_view name, const std::vector<std::string>& steps_from,
                   int64_t unnumbered) {
  const int64_t n = ProfilerStepNumber(name);
  if (n >= 0 || steps_from.empty()) return n;
  for (const std::string& p : steps_from) {
    if (!name.starts_with(p)) continue;
    std::string_view rest = name.substr(p.size());
    if (rest.empty()) return unnumbered;
    const size_t digits = rest.find_first_not_of(" #_:-");
    if (digits == 0 || digits == std::string_view::npos) continue;
    rest.remove_prefix(digits);
    if (rest.size() > 15 || rest.find_first_not_of("0123456789") != std::string_view::npos)
      continue;
    int64_t v = 0;
    for (char c : rest) v = v * 10 + (c - '0');
    return v;
  }
  return -1;
}

namespace {

// A runtime or driver API call (the calls that can launch GPU work).
bool IsApiCall(EventKind k) { return k == EventKind::kRuntime || k == EventKind::kDriver; }

// Some call started GPU work (unlike cudaStreamSynchronize).
bool LaunchedWork(const trace::TraceModel& m) {
  for (size_t i = 0; i < m.size(); ++i)
    if (IsApiCall(m.kind[i]) && IsLaunchCallName(m.name_of(i), /*compat=*/false)) return true;
  return false;
}

// From the first event's start to the last one's end, of every event and of the GPU events
// alone; {INT64_MAX, INT64_MIN} where there are none.
struct Spans {
  std::pair<int64_t, int64_t> all{std::numeric_limits<int64_t>::max(),
                                  std::numeric_limits<int64_t>::min()};
  std::pair<int64_t, int64_t> gpu = all;
};
Spans SpansOf(const trace::TraceModel& m) {
  Spans s;
  auto widen = [&](std::pair<int64_t, int64_t>& span, size_t i) {
    span = {std::min(span.first, m.ts_ns[i]), std::max(span.second, m.end_ns(i))};
  };
  for (size_t i = 0; i < m.size(); ++i) {
    widen(s.all, i);
    if (trace::IsGpuKind(m.kind[i])) widen(s.gpu, i);
  }
  return s;
}

// The plugin's steps; without ProfilerStep ranges, one step "all" over every event, and
// `gpu_span` set when there is GPU work (gpu_window: FindSteps narrows the step to it).
StepsResult FindProfilerSteps(const trace::TraceModel& m, StepsMode mode,
                              const std::vector<std::string>& steps_from,
                              std::pair<int64_t, int64_t>* gpu_span) {
  StepsResult out;
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  int64_t cpu_min = kMax, cpu_max = kMin;
  for (size_t i = 0; i < m.size(); ++i) {
    EventKind k = m.kind[i];
    bool host_op = k == EventKind::kCpuOp || k == EventKind::kUserAnnotation;
    if (host_op || k == EventKind::kPythonFunction) {
      cpu_min = std::min(cpu_min, m.ts_ns[i]);
      cpu_max = std::max(cpu_max, m.end_ns(i));
    }
    if (!host_op) continue;
    const int64_t n = StepNumber(m.name_of(i), steps_from, static_cast<int64_t>(out.steps.size()));
    if (n < 0) continue;
    Step s;
    s.name = m.name_of(i);
    s.number = n;
    s.host_begin_ns = s.begin_ns = m.ts_ns[i];
    s.host_end_ns = s.end_ns = m.end_ns(i);
    out.steps.push_back(std::move(s));
  }
  std::stable_sort(out.steps.begin(), out.steps.end(),
                   [](const Step& a, const Step& b) { return a.begin_ns < b.begin_ns; });
  if (out.steps.empty()) {
    const Spans spans = SpansOf(m);
    out.gpu_window = spans.gpu.first != kMax;
    if (cpu_min == kMax && !out.gpu_window) return out;  // no CPU or GPU events at all
    out.synthetic = true;
    Step s;
    s.name = "all";  // with GPU work: every event, so that it holds every launch call
    if (out.gpu_window) {
      std::tie(cpu_min, cpu_max) = spans.all;
      *gpu_span = spans.gpu;
    }
    s.host_begin_ns = s.begin_ns = cpu_min;
    s.host_end_ns = s.end_ns = cpu_max;
    out.steps.push_back(s);
  }

  // Device span of each runtime call that launched GPU work, in the order the calls began (ties
  // in file order). Kept to the calls that launched something: a big trace has a million events.
  struct Launch {
    int64_t dev_min, dev_max;
    uint32_t call;  // index in the model
  };
  // Per event, the place of its Launch in `runtimes` once it has one (kNoSlot before): each
  // GPU event finds its call's Launch directly, where a binary search among half a million
  // calls per GPU event was most of this function's time on 1 GB.
  constexpr uint32_t kNoSlot = UINT32_MAX;
  std::vector<uint32_t> slot(m.size(), kNoSlot);
  auto call_of = [&](size_t i) {
    int32_t r = m.launcher.empty() ? -1 : m.launcher[i];
    return r >= 0 && IsApiCall(m.kind[static_cast<size_t>(r)]) ? r : -1;
  };
  for (size_t i = 0; i < m.size(); ++i)
    if (int32_t r = call_of(i); r >= 0) slot[static_cast<size_t>(r)] = 0;
  std::vector<Launch> runtimes;
  for (size_t i = 0; i < m.size(); ++i) {
    if (slot[i] == kNoSlot) continue;
    slot[i] = static_cast<uint32_t>(runtimes.size());
    runtimes.push_back({kMax, kMin, static_cast<uint32_t>(i)});
  }
  for (size_t i = 0; i < m.size(); ++i) {
    int32_t r = call_of(i);
    if (r < 0) continue;
    Launch& l = runtimes[slot[static_cast<size_t>(r)]];
    l.dev_min = std::min(l.dev_min, m.ts_ns[i]);
    l.dev_max = std::max(l.dev_max, m.end_ns(i));
  }
  std::vector<uint32_t>().swap(slot);
  // By start, then by call: the calls were taken in event order and the sort is stable.
  base::RadixSortBy(runtimes, [&](const Launch& l) { return m.ts_ns[l.call]; });

  // Walk runtime calls and steps together; a call counts for a step when it lies inside it.
  size_t n = out.steps.size();
  std::vector<int64_t> sdev_min(n, kMax), sdev_max(n, kMin);
  std::vector<int64_t> matched(n, 0);
  size_t si = 0;
  for (size_t ri = 0; ri < runtimes.size() && si < n;) {
    const Launch& rt = runtimes[ri];
    const Step& st = out.steps[si];
    const int64_t begin = m.ts_ns[rt.call], end = m.end_ns(rt.call);
    if (begin < st.host_begin_ns) {
      ++ri;
    } else if (end <= st.host_end_ns) {
      sdev_min[si] = std::min(sdev_min[si], rt.dev_min);
      sdev_max[si] = std::max(sdev_max[si], rt.dev_max);
      ++matched[si];
      out.has_gpu = true;
      ++ri;
    } else if (begin < st.host_end_ns) {
      ++ri;  // straddles the step's end
    } else {
      ++si;
    }
  }
  for (size_t i = 0; i < n; ++i) out.steps[i].launches = matched[i];
  // A trace cut inside its events has lost GPU events, and which ones cannot be told (see
  // StepsResult::gpu_data_cut); a trace that names GPUs or launched work had some.
  out.gpu_data_cut = m.truncated && (out.has_gpu || !m.devices.empty() || LaunchedWork(m));
  if (!out.has_gpu) return out;

  // GPU work that ran before the first step's own work pushes the first step's start.
  int64_t prev_end = out.steps[0].host_begin_ns;
  if (sdev_min[0] != kMax) {
    for (size_t i = 0; i < m.size(); ++i) {
      // Only GPU work ending before step 0's own can move it; test that first (cheap, rare).
      if (!trace::IsGpuKind(m.kind[i]) || m.end_ns(i) >= sdev_min[0]) continue;
      int32_t r = m.launcher[i];
      bool in_step = false;
      if (r >= 0) {
        int64_t t = m.ts_ns[static_cast<size_t>(r)];
        int64_t e = m.end_ns(static_cast<size_t>(r));
        for (const Step& s : out.steps)
          if (t >= s.host_begin_ns && e <= s.host_end_ns) in_step = true;
      }
      if (!in_step) prev_end = std::max(prev_end, m.end_ns(i));
    }
  }
  for (size_t i = 0; i < n; ++i) {
    Step& s = out.steps[i];
    int64_t begin = std::max(prev_end, s.host_begin_ns);
    int64_t end = s.host_end_ns;
    if (sdev_min[i] == kMax)
      end = std::max(end, begin);
    else
      end = std::max(end, sdev_max[i]);
    if (end < begin) end = begin;
    s.begin_ns = begin;
    s.end_ns = end;
    prev_end = end;
  }
  if (mode == StepsMode::kComplete && n > 1) {
    // Trailing steps whose GPU work the profiler did not capture.
    size_t last = n;
    while (last > 0 && matched[last - 1] == 0) --last;
    if (last > 0) {
      size_t keep = last;
      if (last >= 2 &&
          static_cast<double>(matched[last - 2]) * 0.8 > static_cast<double>(matched[last - 1]))
        keep = last - 1;
      for (size_t i = keep; i < n; ++i) out.dropped.push_back(out.steps[i].name);
      out.steps.resize(keep);
    }
  }
  return out;
}

}  // namespace

StepsResult FindSteps(const trace::TraceModel& m, StepsMode mode,
                      const std::vector<std::string>& steps_from) {
  std::pair<int64_t, int64_t> gpu_span;
  StepsResult out = FindProfilerSteps(m, mode, steps_from, &gpu_span);
  if (out.gpu_window)  // no ProfilerStep: the window is the GPU's busy span
    std::tie(out.steps.front().begin_ns, out.steps.front().end_ns) = gpu_span;
  return out;
}

}  // namespace trainprof::analysis
