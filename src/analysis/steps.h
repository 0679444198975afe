// Training steps of one trace, as the TensorBoard profiler plugin found them: each
// ProfilerStep#N host range, extended to the end of the GPU work its runtime calls launched and
// starting no earlier than the previous step's end; trailing steps whose GPU work was not
// captured are dropped (a last step with under 80 % of the previous step's launches is
// incomplete). A trace without ProfilerStep ranges (inference, on-demand and GPU-only traces)
// is one step: the GPU's busy span, from its first GPU event's start to its last one's end, or,
// without GPU work, the span of its CPU events.
// docs/trace-analysis.md gives the algorithm.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trace/trace_model.h"

namespace trainprof::analysis {

struct Step {
  std::string name;      // "ProfilerStep#12", or "all" for a trace without steps
  int64_t number = -1;   // 12
  int64_t begin_ns = 0;  // after the GPU extension
  int64_t end_ns = 0;
  int64_t host_begin_ns = 0;  // the ProfilerStep range itself
  int64_t host_end_ns = 0;
  int64_t launches = 0;  // runtime calls in the step that launched GPU work
  int64_t dur_ns() const { return end_ns - begin_ns; }
};

enum class StepsMode { kComplete, kAll };

struct StepsResult {
  std::vector<Step> steps;
  std::vector<std::string> dropped;  // names of trailing steps left out (kComplete)
  bool synthetic = false;            // no ProfilerStep: one step over the whole trace
  bool gpu_window = false;           // ... and that step is the GPU's busy span
  bool has_gpu = false;              // some runtime call launched GPU work
  // The trace was cut inside its events (TraceModel::truncated) and had GPU work. Kineto writes
  // runtime calls and GPU events after every CPU event, grouped by thread and buffer rather than
  // by time, so a cut takes part of every step's GPU work (a real trace cut at half keeps some
  // launches of each of its 6 steps: 3.4 % GPU utilization against 79.4 % whole). No GPU figure
  // of such a trace can be trusted; the steps stay for the CPU's view.
  bool gpu_data_cut = false;
};

// `steps_from`: host ranges named one of these, or one of these and a number ("step 12",
// "train_step#12": a space, '#', '_', ':' or '-' may come between), are steps too.
StepsResult FindSteps(const trace::TraceModel& m, StepsMode mode,
                      const std::vector<std::string>& steps_from = {});

// "ProfilerStep#12" -> 12; -1 when `name` is not a ProfilerStep range.
int64_t ProfilerStepNumber(std::string_view name);

// The step number of a range named `name`: ProfilerStepNumber's, else, when it is one of
// `steps_from` followed by a number, that number; one of them alone: `unnumbered`; else -1.
int64_t StepNumber(std::string_view name, const std::vector<std::string>& steps_from,
                   int64_t unnumbered);

}  // namespace trainprof::analysis
