#include "analysis/hta/hta_annotations.h"

#include <cmath>
#include <limits>
#include <map>

#include "analysis/steps.h"

namespace trainprof::analysis {

namespace {

// The statistics of each name's durations, by name.
std::vector<AnnotationStats> StatsByName(const std::map<std::string, std::vector<int64_t>>& d) {
  std::vector<AnnotationStats> out;
  for (const auto& [name, durs] : d) {
    AnnotationStats s{.name = name, .count = static_cast<int64_t>(durs.size())};
    s.min_ns = s.max_ns = durs.front();
    for (int64_t x : durs) {
      s.sum_ns += x;
      s.min_ns = std::min(s.min_ns, x);
      s.max_ns = std::max(s.max_ns, x);
    }
    const double n = static_cast<double>(durs.size()), mean = static_cast<double>(s.sum_ns) / n;
    double sq = 0;
    for (int64_t x : durs) sq += (static_cast<double>(x) - mean) * (static_cast<double>(x) - mean);
    s.std_ns = durs.size() > 1 ? std::sqrt(sq / (n - 1)) : std::numeric_limits<double>::quiet_NaN();
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

HtaAnnotations HtaAnnotationStats(const trace::TraceModel& m, const HtaOptions& o) {
  return HtaAnnotationStats(SelectHtaEvents(m, StepsResult{}, o));
}

HtaAnnotations HtaAnnotationStats(const HtaEvents& ev) {
  const trace::TraceModel& m = ev.model();
  HtaAnnotations out;
  std::map<std::string, std::vector<int64_t>> cpu, gpu;
  // CPU annotations before the last step's start, as HTA keeps CPU events; the GPU's drawn
  // before it too (HTA keeps GPU work by its launch's correlation, which a GPU annotation lacks:
  // with one step or include_last_profiler_step it keeps them all, as this does).
  for (size_t i = 0; i < m.size(); ++i) {
    const bool is_cpu = m.kind[i] == trace::EventKind::kUserAnnotation;
    const bool is_gpu = m.kind[i] == trace::EventKind::kGpuUserAnnotation;
    out.any_cpu = out.any_cpu || is_cpu;
    out.any_gpu = out.any_gpu || is_gpu;
    if ((!is_cpu && !is_gpu) || ev.times.ts(i) >= ev.cpu_before) continue;
    if (is_cpu && ev.times.stream(i) != -1) continue;
    (is_cpu ? cpu : gpu)[m.name_of(i)].push_back(ev.times.end(i) - ev.times.ts(i));
  }
  out.cpu = StatsByName(cpu);
  out.gpu = StatsByName(gpu);
  return out;
}

}  // namespace trainprof::analysis
