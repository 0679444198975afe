#include "session/step_attribution.h"

#include <fmt/format.h>

#include <algorithm>

namespace trainprof::session {

int64_t StepAt(const std::vector<record::StepMark>& marks, int64_t t_ns) {
  return static_cast<int64_t>(std::ranges::upper_bound(marks, t_ns, {}, &record::StepMark::end_ns) -
                              marks.begin());
}

namespace {

bool FeedsSpeed(ActionKind kind) {
  return kind == ActionKind::kDataLoader || kind == ActionKind::kCommunication;
}

report::Diagnostic DroppedEvents(const record::ThreadEvents& te, int64_t events_per_thread) {
  return {report::DiagnosticId::kDroppedEvents, static_cast<int64_t>(te.dropped),
          fmt::format("thread '{}' ({}) dropped {} scope events: its buffer was full "
                      "(buffer.events_per_thread = {}); raise it or record fewer steps",
                      te.name, te.tid, te.dropped, events_per_thread)};
}

}  // namespace

Attribution AttributeEvents(const AttributionInput& in, TraceInput* trace) {
  Attribution a;
  const auto& marks = in.marks;
  for (const record::ThreadEvents& te : in.threads) {
    TraceThread tt{te.tid, te.name, {}, {}};
    for (const record::Event& e : te.events) {
      const int64_t b = in.rel(e.begin);
      const int64_t step = StepAt(marks, b);
      if (!in.schedule.RecordsStep(step)) {
        ++a.warmup_dropped;
        continue;
      }
      record::TimedEvent ev{e.loc, b, in.rel(e.end) - b, e.depth};
      a.kept.push_back(ev);
      tt.events.push_back(ev);
      tt.steps.push_back(step);
      if (FeedsSpeed(e.loc->kind)) {
        const bool have = step < static_cast<int64_t>(marks.size());
        const auto i = static_cast<size_t>(step);
        a.step_scopes.push_back({e.loc->kind, have ? marks[i].stage : in.stage, have ? step : -1,
                                 ev.dur_ns, have ? marks[i].batch_size : in.batch_size});
      }
    }
    a.recorded += static_cast<int64_t>(tt.events.size());
    if (te.dropped > 0) a.diagnostics.push_back(DroppedEvents(te, in.events_per_thread));
    if (trace != nullptr && !tt.events.empty()) trace->threads.push_back(std::move(tt));
  }
  if (trace != nullptr) {
    for (const record::StepMark& m : marks) {
      if (in.schedule.RecordsStep(m.profiler_step)) trace->steps.push_back(m);
    }
  }
  return a;
}

}  // namespace trainprof::session
