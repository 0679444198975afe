// Turns the statistics of a finished Session into report sections. Pure functions of their
// inputs, so they are tested without running a Session.
#pragma once

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

void AddSpeedSection(const record::SpeedStats& speed, int64_t warmup_batches,
                     report::Report& report);

}  // namespace trainprof::session
