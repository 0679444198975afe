// The per-step values a run keeps, as the noise-aware compare reads them: step times and
// per-step throughput of the training stage, one group per run of the job (a `profile --repeat`
// run holds several).
//
//   history::StepSeries s = history::ExtractSteps(report);
//   if (s.steps() > 0) ... s.step_time_s[0][0] is the first measured step of the first run
#pragma once

#include <cstdint>

#include "history/noise.h"
#include "report/report.h"

namespace trainprof::history {

struct StepSeries {
  StepGroups step_time_s;    // seconds per step, after the warm-up batches
  StepGroups samples_per_s;  // the same steps as throughput (profile runs only)
  int64_t steps() const;
};

// Profile run: speed.training_rate, leaving out the first speed.warmup_batches steps of each
// repeat (as the averaged figures do), grouped by its `repeat` column when it has one.
// Analyze run: overview.step_breakdown, each step's time averaged over the ranks (as
// overview.avg_step_time_s is), one group. A report without them gives empty groups.
StepSeries ExtractSteps(const report::Report& r);

}  // namespace trainprof::history
