// HTA 0.6.1's get_frequent_cuda_kernel_sequences: the calls of the operators whose names contain
// a given text, at the least depth such calls have, that launched at least `min_length` GPU
// events (with their children); each call's pattern is its name and its GPU events' names in
// start order, and identical patterns are counted with their GPU and CPU time, on HTA's selection
// and µs times (--hta-compat). trainprof's own kernel_sequences.h counts outermost operators.
//
//   auto p = HtaKernelSequences(model, options, "aten::linear", 3);
//   // p[0].pattern == "aten::linear|Memset (Device)|volta_fp16_s884gemm...|..."
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/hta/hta_events.h"
#include "trace/trace_model.h"

namespace trainprof::analysis {

struct HtaSequence {
  std::string pattern;  // "op|kernel|kernel|...", HTA's spelling
  int64_t count = 0;
  int64_t gpu_ns = 0;  // the GPU events' summed duration over the calls
  int64_t cpu_ns = 0;  // the calls' summed duration
};

// In HTA's order: count descending, then pattern. Empty when no call matches. `o` must have
// hta_compat set (RankHtaOptions of the rank's model).
std::vector<HtaSequence> HtaKernelSequences(const trace::TraceModel& m, const HtaOptions& o,
                                            std::string_view operator_name, size_t min_length);

}  // namespace trainprof::analysis
