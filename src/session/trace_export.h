// Writes a finished Session's recorded scopes and steps as trace.json (Chrome trace format):
// one process, one track per thread, a "ProfilerStep#N" event per recorded training step (as
// Kineto names them; "ValidationStep#N" for validation) and every scope nested under it, with the
// step number in args; the system sampler's figures as counter tracks (CPU, memory, GPU curves) of
// the same process; events of extensions (LibTorch operators) on their threads' tracks.
#pragma once

#include <string>
#include <vector>

#include "record/statistics.h"
#include "trace/chrome_trace_writer.h"
#include "trainprof/status.h"

namespace trainprof::session {

struct TraceThread {
  int64_t tid = 0;
  std::string name;
  std::vector<record::TimedEvent> events;
  std::vector<int64_t> steps;  // step number of each event, parallel to events
};

// Events of an extension: LibTorch operators, drawn on their thread's track, where the viewer
// nests them by time under the steps and scopes; or a GPU's kernels, in a process of their own
// (Kineto's layout: pid = device, tid = stream).
struct ExtraEvents {
  static constexpr int64_t kSessionPid = -1;
  int64_t pid = kSessionPid;  // kSessionPid: the session's own process
  std::string process_name;   // names `pid` when it is not the session's; "" = named elsewhere
  std::vector<std::pair<int64_t, std::string>> thread_names;  // tid, name
  std::string cat;                 // e.g. "cpu_op", as Kineto names operator events
  std::vector<std::string> names;  // indexed by ExtraEvent::name
  std::vector<std::string> args;   // JSON object members, indexed by ExtraEvent::args
  struct Event {
    uint32_t name;
    uint32_t args;  // kNoArgs: none
    int64_t tid, begin_ns, dur_ns, step;
  };
  static constexpr uint32_t kNoArgs = UINT32_MAX;
  std::vector<Event> events;
};

// One end of a launch-to-kernel arrow (ChromeTraceWriter::Flow).
struct FlowEnd {
  uint64_t id = 0;
  int64_t ts_ns = 0;
  int64_t pid = ExtraEvents::kSessionPid;
  int64_t tid = 0;
  bool start = true;
};

struct TraceInput {
  std::string process_name;
  int64_t pid = 0;
  int64_t start_unix_ns = 0;  // wall clock at the session start (otherData)
  std::vector<TraceThread> threads;
  std::vector<record::StepMark> steps;        // only recorded steps
  std::vector<trace::CounterTrack> counters;  // system figures, memory curves
  std::vector<ExtraEvents> extra;
  std::vector<FlowEnd> flows;
  std::string device_properties;  // Kineto's top-level "deviceProperties" array; "" = none
};

// Errors name the file.
Status WriteTrace(const TraceInput& in, const std::string& path);

}  // namespace trainprof::session
