// HTA 0.6.1's get_gpu_kernels_with_user_annotations: every GPU kernel, copy and set with a
// correlation id, and the GPU user annotation it falls in on its own GPU track (pid and tid);
// where annotations nest, the shortest one (the leaf), as HTA assigns them longest first. On
// HTA's selection and µs times (--hta-compat).
//
//   auto k = HtaKernelsWithAnnotations(model, RankHtaOptions(model, options.hta));
//   if (!k) ...  // the trace has no gpu_user_annotation: HTA's None
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/hta/hta_events.h"
#include "trace/trace_model.h"

namespace trainprof::analysis {

struct AnnotatedKernel {
  int64_t ts_ns = 0, dur_ns = 0, pid = 0, tid = 0, stream = -1, correlation = -1;
  std::string name;
  std::string annotation;  // "" when it falls in none
};

// In start order; nullopt when the trace has no GPU user annotation at all.
std::optional<std::vector<AnnotatedKernel>> HtaKernelsWithAnnotations(const trace::TraceModel& m,
                                                                      const HtaOptions& o);

}  // namespace trainprof::analysis
