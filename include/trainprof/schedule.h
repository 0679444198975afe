// The profiling schedule, with torch.profiler.schedule's semantics.
//
// Steps are counted from 0 by Session::Step(). The first `skip_first` steps are skipped; then the
// schedule cycles through `wait` idle steps, `warmup` steps (recorded into the buffers to warm
// them, then discarded) and `active` recorded steps. `repeat` cycles are run (0 = forever).
//
//   trainprof::Schedule s{.skip_first = 1, .wait = 1, .warmup = 1, .active = 2, .repeat = 1};
//   s.ActionAt(0) == trainprof::ProfilerAction::kNone;            // skipped
//   s.ActionAt(4) == trainprof::ProfilerAction::kRecordAndSave;   // last active step of cycle
#pragma once

#include <cstdint>

#include "trainprof/status.h"

namespace trainprof {

// torch.profiler.ProfilerAction: NONE, WARMUP, RECORD, RECORD_AND_SAVE.
enum class ProfilerAction { kNone, kWarmup, kRecord, kRecordAndSave };

const char* ProfilerActionName(ProfilerAction action);  // "NONE", "WARMUP", ...

struct Schedule {
  int64_t skip_first = 0;
  int64_t wait = 0;
  int64_t warmup = 0;
  int64_t active = 1;
  int64_t repeat = 0;  // 0 = cycle forever

  // Invalid when a field is negative or active < 1 (torch asserts the same).
  Status Validate() const;
  // The action for step `step` (>= 0). Precondition: Validate() is ok.
  ProfilerAction ActionAt(int64_t step) const;
  // True for kRecord and kRecordAndSave: events of that step end up in the reports.
  bool RecordsStep(int64_t step) const;
};

}  // namespace trainprof
