// HTA's user-annotation statistics (get_gpu_user_annotation_breakdown, and its CPU form): per
// annotation name, the count, sum, min, max and sample standard deviation of the durations of
// the user_annotation (CPU) or gpu_user_annotation events HTA keeps, on its µs times
// (--hta-compat). HTA's fold of the smaller names into "others" is hta.h's HtaFold.
//
//   HtaAnnotations a = HtaAnnotationStats(model, RankHtaOptions(model, options.hta));
//   a.cpu[0].name, a.cpu[0].sum_ns
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/hta/hta_events.h"
#include "trace/trace_model.h"

namespace trainprof::analysis {

struct AnnotationStats {
  std::string name;
  int64_t count = 0, sum_ns = 0, min_ns = 0, max_ns = 0;
  double std_ns = 0;  // sample standard deviation; NaN for one instance (pandas')
};

struct HtaAnnotations {
  bool any_cpu = false, any_gpu = false;  // the trace has events of that category at all
  std::vector<AnnotationStats> cpu, gpu;  // by name
};

HtaAnnotations HtaAnnotationStats(const trace::TraceModel& m, const HtaOptions& o);
// The same from a selection made already (SelectHtaEvents with --hta-compat).
HtaAnnotations HtaAnnotationStats(const HtaEvents& ev);

}  // namespace trainprof::analysis
