#include "trainprof/schedule.h"

#include <fmt/format.h>

namespace trainprof {

const char* ProfilerActionName(ProfilerAction action) {
  switch (action) {
    case ProfilerAction::kNone:
      return "NONE";
    case ProfilerAction::kWarmup:
      return "WARMUP";
    case ProfilerAction::kRecord:
      return "RECORD";
    case ProfilerAction::kRecordAndSave:
      return "RECORD_AND_SAVE";
  }
  return "?";
}

Status Schedule::Validate() const {
  if (skip_first < 0 || wait < 0 || warmup < 0 || repeat < 0) {
    return InvalidArgument(fmt::format(
        "schedule: skip_first, wait, warmup and repeat must be >= 0 (got {}, {}, {}, {})",
        skip_first, wait, warmup, repeat));
  }
  if (active < 1)
    return InvalidArgument(fmt::format("schedule.active must be >= 1, got {}", active));
  return Status::Ok();
}

// The same arithmetic as torch.profiler.schedule's schedule_fn.
ProfilerAction Schedule::ActionAt(int64_t step) const {
  if (step < skip_first) return ProfilerAction::kNone;
  step -= skip_first;
  const int64_t cycle = wait + warmup + active;
  if (repeat > 0 && step / cycle >= repeat) return ProfilerAction::kNone;
  const int64_t mod = step % cycle;
  if (mod < wait) return ProfilerAction::kNone;
  if (mod < wait + warmup) return ProfilerAction::kWarmup;
  return mod < cycle - 1 ? ProfilerAction::kRecord : ProfilerAction::kRecordAndSave;
}

bool Schedule::RecordsStep(int64_t step) const {
  ProfilerAction a = ActionAt(step);
  return a == ProfilerAction::kRecord || a == ProfilerAction::kRecordAndSave;
}

}  // namespace trainprof
