// One Chrome trace from the PyTorch profiler traces a run wrote and the system figures sampled
// while it ran, on one wall clock, so Perfetto shows CPU, memory and GPU curves under the
// kernels (`trainprof run --traces`).
//
//   trace::MergeInput in{.traces = {"tb/worker0.pt.trace.json.gz"}, .counters = tracks,
//                        .counters_origin_unix_ns = start_wall_ns, .process_name = "system"};
//   TRAINPROF_RETURN_IF_ERROR(trace::WriteMergedTrace(in, "run/trace.json"));
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trace/chrome_trace_writer.h"
#include "trainprof/status.h"

namespace trainprof::trace {

struct MergeInput {
  std::vector<std::string> traces;      // Kineto traces (.json or .json.gz)
  std::vector<CounterTrack> counters;   // t_ns since counters_origin_unix_ns
  int64_t counters_origin_unix_ns = 0;  // wall clock (system_clock) of the counters' time 0
  std::string process_name = "trainprof run: system";
  // Per trace (parallel to `traces`; empty: none), how far its clock runs ahead of the first
  // trace's, as estimated from collective ends (analysis/ranks/collectives.h); taken off its events
  // so that the ranks' collectives line up.
  std::vector<int64_t> clock_offsets_ns;
  // When set, a trace that cannot be read is left out and its one-line error appended here.
  std::vector<std::string>* skipped = nullptr;
};

// Kineto writes timestamps in µs, either since the Unix epoch or (PyTorch 2.x) since its
// "baseTimeNanoseconds"; each trace's events are moved onto the first trace's base, and the
// counters onto the same, as their own process. With several traces, each trace's processes are
// its own (pids moved up by its place << 22, names prefixed "rank N: "). Errors: a trace that
// cannot be read or is not JSON (naming the file and byte offset), the output not written.
Status WriteMergedTrace(const MergeInput& in, const std::string& path);

}  // namespace trainprof::trace
