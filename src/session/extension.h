// Extensions add collectors to a Session without the Session knowing them (the LibTorch adapter
// in src/torch/ is one; it is optional, so the Session cannot link it). An extension hears every
// Step() and, once, at Finish(), adds its sections to the report and its events to the trace.
//
//   class MyCollector : public session::Extension {
//     void OnStep(int64_t step) override { ... }          // quick: the session lock is held
//     Status OnFinish(session::FinishContext& ctx) override { ctx.report.AddSection(...); }
//   };
//   TRAINPROF_RETURN_IF_ERROR(session::AttachExtension(s, std::make_shared<MyCollector>()));
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "record/recorder.h"
#include "record/statistics.h"
#include "report/report.h"
#include "session/trace_export.h"
#include "trainprof/options.h"
#include "trainprof/session.h"
#include "trainprof/status.h"

namespace trainprof::session {

struct FinishContext {
  const Options& options;
  const std::string& run_dir;
  const base::TickConverter& conv;
  int64_t t0_ns = 0;   // steady_clock ns of the session start; event times are relative to it
  int64_t end_ns = 0;  // the session's end, relative to t0_ns
  const std::vector<record::StepMark>& steps;  // every Step(), times relative to t0_ns
  report::Report& report;
  TraceInput* trace = nullptr;  // null when output.trace is false
  // Every recorded scope, per thread, times in ticks (Rel() converts them).
  const std::vector<record::ThreadEvents>* threads = nullptr;
  // Ticks (base::Ticks()) to ns since the session start.
  int64_t Rel(uint64_t ticks) const { return conv.ToNs(ticks) - t0_ns; }
};

class Extension {
 public:
  virtual ~Extension() = default;
  // The schedule's step `profiler_step` begins (called once at attach with the current step,
  // then from every Step()). Runs with the session lock held: keep it short, never call back
  // into the Session.
  virtual void OnStep(int64_t profiler_step) = 0;
  // The program set its batch size (Session::SetBatchSize); same rules as OnStep.
  virtual void OnBatchSize(int64_t /*batch_size*/) {}
  // The program set its epoch (Session::SetEpoch); same rules as OnStep.
  virtual void OnEpoch(int64_t /*epoch*/) {}
  // Called once when Finish() begins, before the recorded events are collected: stop
  // background work here so the report's wall time does not include it.
  virtual void OnStop() {}
  // Called once by Finish(), before the report is rendered. Errors name the file that could not
  // be written; the session's other outputs are still written.
  virtual Status OnFinish(FinishContext& ctx) = 0;
  // True for the option keys whose report this extension produces ("memory.enabled"); the
  // session says in the report when an enabled report has no collector attached.
  virtual bool Claims(std::string_view key) const { return false; }
};

// Errors: the session has finished (FailedPrecondition).
Status AttachExtension(Session& session, std::shared_ptr<Extension> extension);

}  // namespace trainprof::session
