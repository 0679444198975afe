// The live view's snapshot (issue 57): the figures of a running Session at one tick, as
// <run folder>/live.json and as one line of text. The Session's live view writes it
// (session/live.h); `trainprof watch RUN_DIR` reads it from another terminal. Figures not
// measured are absent from the JSON and "n/a" in the line, never 0.
//
//   LiveSnapshot s = BuildLiveSnapshot(steps, boundaries_ns, batches, now_ns, batch_size);
//   std::string line = LiveLine(s);   // "trainprof live: step 120 | 41.2 ms/step (median ..."
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trainprof/status.h"

namespace trainprof::report {

// The figures of one tick. Times in seconds; nullopt: not measured (yet).
struct LiveSnapshot {
  int64_t step = 0;       // Step() calls so far
  double elapsed_s = 0;   // since the session started
  bool finished = false;  // the session has finished (the last snapshot)
  std::optional<double> step_last_s, step_median_s, step_p95_s;  // over the window
  std::optional<double> steps_per_s, samples_per_s;
  std::optional<int64_t> batch_size;
  std::optional<double> rss_bytes, cpu_pct;  // this process; cpu_pct of one core
};

// `steps` Step() calls so far; `boundaries_ns` the last steps' boundaries, ns after the
// session's start (the start, or an earlier step's end, then each later step's end): step
// times are their differences, throughput over them. `batches[i]`: the batch size of the step
// ending at boundaries_ns[i] (0 unknown; [0] unused): samples/s when every one is known, so a
// validation stage with a larger batch counts its own. `batch_size`: the current one (0 unknown).
LiveSnapshot BuildLiveSnapshot(int64_t steps, const std::vector<int64_t>& boundaries_ns,
                               const std::vector<int64_t>& batches, int64_t now_ns,
                               int64_t batch_size);

std::string LiveJson(const LiveSnapshot& s);
// Errors: not JSON, or not a live.json (no "step"); the message names `where`.
StatusOr<LiveSnapshot> ParseLiveJson(const std::string& text, const std::string& where);
// One line: "step 120 | 41.2 ms/step (median 40.8, p95 44.0) | 24.3 steps/s, 777 samples/s |
// RSS 512 MiB, CPU 98 %"; "n/a" for what is not measured.
std::string LiveLine(const LiveSnapshot& s);

}  // namespace trainprof::report
