// Turns the statistics of a finished Session into report sections. Pure functions of their
// inputs, so they are tested without running a Session.
#pragma once

#include <string>
#include <vector>

#include "record/statistics.h"
#include "report/report.h"

namespace trainprof::session {

struct TimeInput {
  std::vector<record::ActionStats> actions;  // sorted by total time
  double wall_s = 0;
  int64_t recorded_events = 0;
  bool verbose = false;
};
void AddTimeSection(const TimeInput& in, report::Report& report);

struct SpeedInput {
  record::SpeedStats speed;
  int64_t warmup_batches = 0;
  int64_t loader_workers = -1;  // Session::SetDataLoaderWorkers(); -1 when not said
};
// Adds the "speed" section; a warning finding when training waited for data more than
// kDataWaitFindingPct of its step time, with the loader workers that would hide the wait.
void AddSpeedSection(const SpeedInput& in, report::Report& report);
inline constexpr double kDataWaitFindingPct = 5.0;

// report.html's charts of the speed section's rate tables: throughput over time (one line per
// stage that has rows) and the data-loader wait per training step (when it was measured).
void AddSpeedCharts(report::Section& s);

// The per-step series `id` (training_rate, validation_rate) that compare reads the step times
// from: step, epoch, time, batches/s, samples/s, data wait.
void AddRateSeries(report::Section& s, const std::string& id, const std::string& title,
                   const std::vector<record::RatePoint>& points);

}  // namespace trainprof::session
