// Time and speed statistics computed from recorded scopes and step marks. Plain numbers in
// seconds; turning them into report sections is the Session's job.
//
//   std::vector<record::ActionStats> t = record::ComputeActionStats(events);
//   record::SpeedStats s = record::ComputeSpeed(steps, step_scopes, /*warmup_batches=*/5);
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trainprof/scope.h"
#include "trainprof/stage.h"

namespace trainprof::record {

// A recorded scope after tick-to-ns conversion.
struct TimedEvent {
  const SourceLocation* loc;
  int64_t begin_ns;  // since the session started
  int64_t dur_ns;
  uint32_t depth;
};

struct DurationSummary {
  int64_t count = 0;
  double total_s = 0, mean_s = 0, min_s = 0, median_s = 0, p95_s = 0, max_s = 0;
};
// Percentiles interpolate linearly between the closest ranks (numpy's default). Reorders `ns`.
DurationSummary Summarize(std::vector<int64_t>& ns);

struct ActionStats {
  std::string name;      // full action name, e.g. "[_TrainingEpochLoop].train_dataloader_next"
  std::string category;  // the "[...]" prefix without brackets, "" when none
  ActionKind kind = ActionKind::kOther;
  uint32_t min_depth = 0;  // shallowest nesting the action was seen at (0 = top level)
  DurationSummary time;
};
// "[Category]name" -> "Category"; "" when the name has no bracketed prefix.
std::string_view CategoryOf(std::string_view action);

// One entry per action name, sorted by total time, largest first.
std::vector<ActionStats> ComputeActionStats(const std::vector<TimedEvent>& events);
// The concise set (time.verbose: false): loops, data loader, forward, backward, optimizer and
// step actions, plus every other top-level action.
bool InConciseSet(const ActionStats& a);

// The end of one step, as marked by Session::Step().
struct StepMark {
  Stage stage = Stage::kTrain;
  int64_t epoch = 0;
  int64_t batch_size = 0;
  int64_t index_in_stage = 0;  // 0-based count of steps of this stage
  int64_t profiler_step = 0;   // the schedule's step number
  int64_t begin_ns = 0;        // since the session started
  int64_t end_ns = 0;
  int64_t tid = 0;
};

// A scope the speed report attributes to its step: a data-loader fetch (kDataLoader: the time
// the loop waited for its batch) or a collective (kCommunication).
struct StepScope {
  ActionKind kind = ActionKind::kDataLoader;
  Stage stage = Stage::kTrain;
  int64_t step = -1;  // index into the step marks; -1 when it began after the last step
  int64_t dur_ns = 0;
  int64_t batch_size = 0;
};

struct StageSpeed {
  int64_t steps = 0;           // all steps of the stage
  int64_t measured_steps = 0;  // after the warm-up batches
  double mean_step_s = 0;
  double median_step_s = 0, min_step_s = 0, max_step_s = 0;
  double batches_per_s = 0;  // measured steps / their total time
  double samples_per_s = 0;  // samples of measured steps / their total time
  // Over the measured steps: time in data-loader fetches and in collectives, and their share
  // of the steps' wall time (0-100).
  double data_wait_s = 0, data_wait_pct = 0;
  double communication_s = 0, communication_pct = 0;
};
struct LoaderSpeed {
  int64_t fetches = 0;
  double mean_fetch_s = 0;
  double batches_per_s = 0;  // 1 / mean fetch time
  double samples_per_s = 0;  // mean batch size / mean fetch time
};
struct RatePoint {
  int64_t step = 0;  // index in stage
  int64_t epoch = 0;
  double t_s = 0;  // end of the step, since the session started
  double batches_per_s = 0;
  double samples_per_s = 0;
  double data_wait_s = 0;  // data-loader time inside the step
};
struct SpeedStats {
  StageSpeed train, validation;
  LoaderSpeed train_loader, validation_loader;
  std::vector<RatePoint> training_rate, validation_rate;
};
SpeedStats ComputeSpeed(const std::vector<StepMark>& steps, const std::vector<StepScope>& scopes,
                        int64_t warmup_batches);

}  // namespace trainprof::record
