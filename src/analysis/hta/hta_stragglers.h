// What HTA 0.6.1's get_potential_stragglers reads from one rank: each ProfilerStep's span (the
// first start and the last end of the events HTA puts in that iteration: CPU events by the step
// range they start in, GPU work by its launch call's) and every ncclKernel on a stream with its
// iteration, on HTA's selection and µs times (--hta-compat). The drop-in picks the stragglers
// across ranks as HTA does.
//
//   HtaStragglerRows rows = HtaStragglerData(model, RankHtaOptions(model, options.hta));
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/hta/hta_events.h"
#include "trace/trace_model.h"

namespace trainprof::analysis {

struct StepSpan {
  int64_t step = 0, first_ns = 0, last_end_ns = 0;
};

struct CommKernelRow {
  int64_t step = -1, ts_ns = 0, dur_ns = 0, stream = -1;
  std::string name;
};

struct HtaStragglerRows {
  std::vector<int64_t> step_numbers;  // every ProfilerStep#N of the trace, ascending
  std::vector<StepSpan> steps;        // by step number: the steps HTA keeps events of
  std::vector<CommKernelRow> comm;    // in start order
};

HtaStragglerRows HtaStragglerData(const trace::TraceModel& m, const HtaOptions& o);
// The same from a selection made already (SelectHtaEvents with --hta-compat).
HtaStragglerRows HtaStragglerData(const HtaEvents& ev);

}  // namespace trainprof::analysis
