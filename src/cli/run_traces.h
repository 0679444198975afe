// The PyTorch profiler traces of `trainprof run --traces DIR`: which the command wrote during
// the run, their analysis (the sections of `trainprof analyze`), and trace.json.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "report/report.h"
#include "trace/chrome_trace_writer.h"
#include "trainprof/options.h"
#include "trainprof/status.h"

namespace trainprof::cli {

struct RunTraces {
  std::vector<std::string> files;  // in the run folder's traces/ (linked or copied)
  // Per file, its clock's offset from the first rank's, estimated from collective ends; empty
  // when the ranks share no collective or the match is doubtful.
  std::vector<int64_t> clock_offsets_ns;
};

// Finds the *.pt.trace.json[.gz] files below `dir` (recursively) modified since `since_unix_ns`,
// links (or copies) them into <run_dir>/traces/, analyses them and adds the analysis sections
// and diagnostics to `r`. A missing folder, no new trace or an unreadable trace is a finding
// in `r`, never fatal: the system report of the run is still written. Empty `dir`: nothing.
RunTraces CollectRunTraces(const std::string& dir, int64_t since_unix_ns,
                           const std::string& run_dir, report::Report& r);

// trace.json: the collected traces' events with the system counter tracks on the same clock,
// or the counters alone; the ranks' clocks aligned by their offsets. Errors name the file.
Status WriteRunTrace(const RunTraces& t, std::vector<trace::CounterTrack> counters,
                     int64_t start_unix_ns, const Options& o, const std::string& run_dir);

}  // namespace trainprof::cli
