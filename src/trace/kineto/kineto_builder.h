// The Kineto half of the trace reader's meaning: one parsed event (RawEvent, the fields the
// analyses read and nothing else) goes into the TraceModel, or into a counted diagnostic. The
// reader (kineto_reader.cc) finds the fields; this decides what they mean.
//
//   EventBuilder b("rank0.json");
//   RawEvent ev;  ev.ph = {Scalar::kString, "X"};  ...
//   b.Add(ev);
//   TraceModel m = b.Finish();
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "trace/kineto/json_scanner.h"
#include "trace/model_finish.h"
#include "trace/trace_model.h"

namespace trainprof::trace {

// One event as parsed, before it is committed. Views live until the next event.
struct RawEvent {
  using Scalar = json::Scalar;
  Scalar ph, cat, name, pid, tid, ts, dur, id;
  Scalar correlation, external_id, device, in_device, stream, blocks_per_sm, occupancy;
  Scalar total_allocated, total_reserved, device_id, device_type, bytes, addr;  // [memory]
  Scalar input_dims, input_types;  // cpu_op "Input Dims" / "Input type" (JSON arrays as text)
  Scalar concrete_inputs;          // cpu_op "Concrete Inputs" (PyTorch 2.x: scalars as strings)
  Scalar call_stack;               // cpu_op "Call stack" (";"-separated frames)
  Scalar memcpy_bytes;             // gpu_memcpy "bytes"
  Scalar launch_kernel;            // a ROCm launch call's "kernel" (the kernel's name)
  // Collectives (CollectiveArgs).
  Scalar coll_name, pg_name, comms_id, dtype, seq, in_nelems, out_nelems, group_size;
  Scalar wait_on_stream, wait_on_record;  // cuda_sync (SyncWait)
  Scalar memory_bw;                       // gpu_memcpy/gpu_memset "memory bandwidth (GB/s)"
  // cuda_profiler_range: CUPTI metrics ("smsp__sass_thread_inst_executed_op_fadd_pred_on.sum")
  // as (name, number text); the parser clears it for each event.
  std::vector<std::pair<std::string, std::string>> counters;
  bool has_args = false;
};

// A CUPTI metric's name ("unit__counter.rollup"): an arg no other field reads.
inline bool IsCounterKey(std::string_view key) { return key.find("__") != std::string_view::npos; }

// The member of an event's args that fills `ev`'s field, or nullptr for args nobody reads.
json::Scalar* ArgTarget(std::string_view key, RawEvent* ev);

class EventBuilder {
 public:
  explicit EventBuilder(std::string name);
  TraceModel& model() { return m_; }

  void Add(const RawEvent& ev);
  // A top-level member other than traceEvents, as raw JSON text.
  void TopValue(std::string_view key, std::string_view text);
  // Counts a per-event problem under a diagnostic, keeping the first example; `detail` keeps
  // apart the counts of one diagnostic (unknown_category's category).
  void Count(base::DiagnosticId id, std::string example, std::string_view detail = {});
  int64_t events_seen() const { return events_seen_; }
  // Takes in what `o` built from the next part of the same file, as if this builder had read it.
  void Absorb(EventBuilder&& o);
  // The model, with diagnostics, rank, flows checked and launches linked.
  TraceModel Finish();

 private:
  void AddFlow(const RawEvent& ev, std::string_view ph);
  bool AddMemory(const RawEvent& ev);
  void KeepMemoryEvent(const RawEvent& ev, int64_t dev, int64_t ts_ns, int64_t bytes);
  void AddComplete(const RawEvent& ev);
  int64_t IdOf(const json::Scalar& s);
  void AddCollectiveArgs(const RawEvent& ev, size_t i);
  void AddSyncWait(const RawEvent& ev, size_t i);
  void AddOpArgs(const RawEvent& ev, EventKind k, size_t i);
  void PlaceGpuWork(const RawEvent& ev, EventKind k, Track* where);
  uint32_t TrackOf(const Track& t);
  void ReadTopValue(std::string_view key, std::string_view text);
  void ApplyBaseTime();
  void ReportCounts();
  void CheckFlows();

  std::string name_;
  TraceModel m_;
  int64_t events_seen_ = 0;
  std::string distributed_info_, device_properties_, base_time_, host_name_;
  struct Counted {
    base::DiagnosticId id;
    int64_t count = 0;
    std::string example;
  };
  // By "name:detail", so the diagnostics come out in the order of their names.
  std::map<std::string, Counted> counts_;
  std::vector<int64_t> flow_starts_, flow_ends_;
  std::vector<MemoryDelta> memory_deltas_;  // [memory] events with Bytes but no Total Allocated
  struct TrackHash {
    size_t operator()(const Track& t) const {
      // Unsigned: pids and tids come from the file and may be huge (signed overflow is UB).
      const auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
      return std::hash<uint64_t>()(u(t.pid) * 1000003u ^ u(t.tid) * 10007u ^ u(t.device) * 101u ^
                                   u(t.stream));
    }
  };
  std::unordered_map<Track, uint32_t, TrackHash> track_index_;
  uint32_t last_track_ = 0;
};

}  // namespace trainprof::trace
