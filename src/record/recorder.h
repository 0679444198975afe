// The recorder behind TRAINPROF_SCOPE: per-thread, append-only event buffers grouped into
// epochs (one epoch = one Session). Only the owning thread writes a buffer; a Session reads the
// published prefix of every buffer of its epoch, so collection never stops the writers.
//
//   StatusOr<uint32_t> epoch = record::BeginEpoch(1 << 20);
//   record::SetRecording(true);
//   ... scopes run on any thread ...
//   record::SetRecording(false);
//   std::vector<record::ThreadEvents> ev = record::Collect(*epoch);
//   record::EndEpoch(*epoch);
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "trainprof/scope.h"
#include "trainprof/status.h"

namespace trainprof::record {

// One finished scope, in ticks (see base/clock.h).
struct Event {
  uint64_t begin;
  uint64_t end;
  const SourceLocation* loc;
  uint32_t depth;
  uint32_t cuda_slot;  // the scope's pair of CUDA events (record/cuda_events.h); 0: none
};
static_assert(sizeof(Event) == 32);

struct ThreadEvents {
  int64_t tid = 0;   // kernel thread id
  std::string name;  // SetThreadName(), else the pthread name
  std::vector<Event> events;
  uint64_t dropped = 0;  // events lost because the buffer was full
};

// Starts an epoch. FailedPrecondition when another epoch (Session) is active.
StatusOr<uint32_t> BeginEpoch(int64_t events_per_thread);
// Turns recording on or off for every thread (the schedule's decision for the current step).
void SetRecording(bool on);
// Copies every event published so far in `epoch`, one entry per thread that recorded.
std::vector<ThreadEvents> Collect(uint32_t epoch);
// Where ScanNew() stopped in each thread's buffer; start with an empty one.
struct ScanCursor {
  std::vector<std::pair<const void*, size_t>> next;  // buffer, index of its next event
};
// Calls f(tid, event) for each event of `epoch` published since the last call with `cursor`
// (the live view: a few thousand events a second, never a copy of the whole buffer).
void ScanNew(uint32_t epoch, ScanCursor& cursor,
             const std::function<void(int64_t tid, const Event&)>& f);
// Ends the epoch: later events are ignored until the next BeginEpoch.
void EndEpoch(uint32_t epoch);

}  // namespace trainprof::record
