// The steps that finish a TraceModel whatever format it was read from: a reader adds its events
// (and what its format says of ranks, devices and memory) to the model, then calls these, so a
// second format gets ranks, memory peaks, devices and launch links as the Kineto reader does.
//
//   NameRank(m, path);                         // first: no rank from the contents? the name's
//   ...                                        // the format's own checks and diagnostics
//   FinishModel(m, path, std::move(deltas));   // last
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "trace/trace_model.h"

namespace trainprof::trace {

// A memory event that gives a change of allocated bytes but no total (Kineto's [memory] events
// without "Total Allocated"), on the model's clock.
struct MemoryDelta {
  int64_t device = 0, ts_ns = 0, bytes = 0;
};

// A device's "Total Allocated" seen at one memory event: its peak (TraceModel's
// peak_allocated_bytes, keyed by Device Id, -1 for the CPU) raised to it.
void RaisePeak(TraceModel& m, int64_t device, int64_t total_allocated);

// When the contents named no rank (m.rank_source empty): the file name's (RankFromFileName,
// source "file name"), else rank 0 with a rank_unknown diagnostic naming `file`.
void NameRank(TraceModel& m, std::string_view file);

// The memory events in time order; a device's peak rebuilt from `deltas` where the format gave
// none (a memory_from_deltas diagnostic says so); the devices resolved (devices.h); launches
// linked to their GPU work.
void FinishModel(TraceModel& m, std::string_view file, std::vector<MemoryDelta> deltas);

}  // namespace trainprof::trace
