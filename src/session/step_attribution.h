// Places a Session's recorded scopes in the steps of its schedule: which are kept (recorded
// steps), which were warm-up and are dropped, which data-loader and communication scopes feed
// the speed report, and what goes to trace.json. A pure function of its inputs, shared by
// every way in (C++ loops, the Python package).
//
//   session::Attribution a = session::AttributeEvents({threads, marks, schedule, rel, ...});
//   record::ComputeActionStats(a.kept);
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "record/recorder.h"
#include "record/statistics.h"
#include "report/report.h"
#include "session/trace_export.h"
#include "trainprof/schedule.h"
#include "trainprof/stage.h"

namespace trainprof::session {

struct AttributionInput {
  const std::vector<record::ThreadEvents>& threads;
  const std::vector<record::StepMark>& marks;  // every Step(), times since the session start
  const Schedule& schedule;
  std::function<int64_t(uint64_t)> rel;  // ticks -> ns since the session start
  Stage stage = Stage::kTrain;           // the stage and batch size at the end, for scopes
  int64_t batch_size = 0;                // that began after the last Step()
  int64_t events_per_thread = 0;         // buffer.events_per_thread, for the diagnostic
};

struct Attribution {
  std::vector<record::TimedEvent> kept;         // scopes that began in recorded steps
  std::vector<record::StepScope> step_scopes;   // their data-loader and communication scopes
  int64_t recorded = 0;                         // kept.size()
  int64_t warmup_dropped = 0;                   // scopes of warm-up steps, discarded
  std::vector<report::Diagnostic> diagnostics;  // a dropped_events warning per full buffer
};

// With `trace`, also fills its threads and recorded steps.
Attribution AttributeEvents(const AttributionInput& in, TraceInput* trace);

// The schedule step of an instant: Step() calls that ended before it.
int64_t StepAt(const std::vector<record::StepMark>& marks, int64_t t_ns);

}  // namespace trainprof::session
