// What the data-loader wait looks like over the steps, and the advice that fits it and the loader:
// waits in spikes (an epoch's first batches while workers start, a slow batch) call for workers
// that persist and prefetch further; a steady wait in every step for more workers or cheaper
// samples; "set num_workers" only when the trace shows loading in the training process.
//
//   LoaderWait w = DescribeLoaderWait(a.overview, LoaderWorkers(m));
//   c.detail += "; " + w.detail;  c.advice = w.advice;
#pragma once

#include <string>

#include "analysis/overview.h"
#include "trace/trace_model.h"

namespace trainprof::analysis {

// Whether the loader runs worker processes: PyTorch names its iterator in the data-loader range
// ("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__").
enum class LoaderWorkers { kUnknown, kNone, kSome };
LoaderWorkers FindLoaderWorkers(const trace::TraceModel& m);

struct LoaderWait {
  enum class Pattern { kUnknown, kSteady, kSpikes } pattern = Pattern::kUnknown;
  std::string detail;  // the pattern with its figures ("in spikes: 1 of 10 steps holds 91 % ...")
  std::string advice;
};

// Spikes: the steps waiting over 4x the median step's wait hold at least half of all the wait.
// Steady: the median step waits at least half the mean. Fewer than 3 steps: unknown.
LoaderWait DescribeLoaderWait(const Overview& ov, LoaderWorkers workers);

}  // namespace trainprof::analysis
