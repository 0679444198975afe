// GPU work that overlaps on one stream. A stream runs its work in order, yet traces show
// overlap: ROCm writes kernel durations that reach past the next kernel's start, and Hopper's
// and Blackwell's programmatic dependent launch starts a kernel while the one before it
// finishes. Nothing is dropped (every view that measures busy time takes the union of the
// intervals, so each instant counts once); NoteStreamOverlaps counts the overlaps and says so
// in a "kernels_overlap_on_stream" diagnostic.
//
//   StreamOverlap o = NoteStreamOverlaps(model);  // o.events, o.overlap_ns
#pragma once

#include <cstdint>

#include "trace/trace_model.h"

namespace trainprof::trace {

struct StreamOverlap {
  int64_t events = 0;      // GPU events that start before earlier work on their stream ends
  int64_t overlap_ns = 0;  // the time they share with it
};

// Adds the diagnostic to `m` when anything overlaps.
StreamOverlap NoteStreamOverlaps(TraceModel& m);

}  // namespace trainprof::trace
