// Writes a finished Session's recorded scopes and steps as trace.json (Chrome trace format):
// one process, one track per thread, a "ProfilerStep#N" event per recorded step (as Kineto
// names them) and every scope nested under it, with the step number in args; the system
// sampler's figures as counter tracks (CPU, memory, GPU curves) of the same process.
#pragma once

#include <string>
#include <vector>

#include "record/statistics.h"
#include "system/system_report.h"
#include "trainprof/status.h"

namespace trainprof::session {

struct TraceThread {
  int64_t tid = 0;
  std::string name;
  std::vector<record::TimedEvent> events;
  std::vector<int64_t> steps;  // step number of each event, parallel to events
};

struct TraceInput {
  std::string process_name;
  int64_t pid = 0;
  int64_t start_unix_ns = 0;  // wall clock at the session start (otherData)
  std::vector<TraceThread> threads;
  std::vector<record::StepMark> steps;  // only recorded steps
  std::vector<system::CounterTrack> counters;  // system figures, drawn under the steps
};

// Errors name the file.
Status WriteTrace(const TraceInput& in, const std::string& path);

}  // namespace trainprof::session
