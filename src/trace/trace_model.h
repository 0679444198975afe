// TraceModel: one profiler trace (one rank's file) as parallel arrays, the input of every analysis
// in src/analysis/. Built by the Kineto reader (kineto_reader.h) from PyTorch profiler traces or
// from trainprof's own trace.json. Times are integer nanoseconds, so fractional-microsecond
// timestamps stay exact.
//
//   StatusOr<trace::TraceModel> m = trace::ReadTraceFile("rank0.json.gz", {});
//   for (size_t i = 0; i < m->size(); ++i)
//     if (m->kind[i] == trace::EventKind::kKernel) total += m->dur_ns[i];
#pragma once

#include <cstdint>
#include <deque>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/diagnostics.h"

namespace trainprof::trace {

// What an event is, from its Kineto category (today's names and the pre-2021 ones).
enum class EventKind : uint8_t {
  kCpuOp,              // cpu_op, Operator, trainprof's own scopes
  kUserAnnotation,     // user_annotation (ProfilerStep#N, record_function ranges)
  kGpuUserAnnotation,  // gpu_user_annotation: a user range drawn on a GPU stream
  kPythonFunction,     // python_function
  kRuntime,            // cuda_runtime, Runtime, hip_runtime
  kDriver,             // cuda_driver, hip_driver
  kKernel,             // kernel, Kernel
  kMemcpy,             // gpu_memcpy, Memcpy
  kMemset,             // gpu_memset, Memset
  kSpan,               // Trace: the profiler's own span
  kOther,              // any other category (counted in a diagnostic when unknown)
};
const char* EventKindName(EventKind k);

inline bool IsGpuKind(EventKind k) {
  return k == EventKind::kKernel || k == EventKind::kMemcpy || k == EventKind::kMemset;
}

// A GPU as `deviceProperties` describes it; fields the trace lacks stay 0 / empty.
struct DeviceInfo {
  int64_t id = -1;
  std::string name;
  int64_t total_memory_bytes = 0;
  int64_t compute_major = 0;
  int64_t compute_minor = 0;
  int64_t num_sms = 0;
  int64_t max_threads_per_sm = 0;
  std::string vendor;  // "NVIDIA", "AMD"; "" when neither the name nor the runtime says
  std::string arch;    // "sm_90", "gfx942" (devices.h); "" when unknown
};

// Interned strings: each distinct name is stored once and referred to by a dense id.
class NameTable {
 public:
  uint32_t Intern(std::string_view s);
  const std::string& operator[](uint32_t id) const { return names_[id]; }
  size_t size() const { return names_.size(); }
  // Id of `s` if interned, else UINT32_MAX.
  uint32_t Find(std::string_view s) const;

 private:
  static uint64_t Hash(std::string_view s);
  // The slot of `s` (hash `h`): the one holding its id, else the empty one it would take.
  size_t SlotOf(std::string_view s, uint64_t h) const;
  void Grow();

  std::deque<std::string> names_;  // by id
  std::vector<uint64_t> hashes_;   // by id
  // Open addressing, linear probing, at most half full: id + 1 per slot, 0 for empty. Every
  // cpu_op interns its name, Input Dims and Input type (73,000 lookups on trace_diff_control),
  // where std::unordered_map's node per entry and division per lookup cost 2 % of analyze.
  std::vector<uint32_t> slots_;
};

inline constexpr int64_t kNone = -1;

// An int64 column in 4 bytes an entry: durations and ids nearly always fit in 32 bits, so those
// are kept inline and the rare wider value in a side table. Reads return the int64.
class Int64Column {
 public:
  int64_t operator[](size_t i) const {
    int32_t v = narrow_[i];
    return v != kWide ? v : wide_.at(i);
  }
  void push_back(int64_t v) {
    if (Narrow(v)) {
      narrow_.push_back(static_cast<int32_t>(v));
      return;
    }
    wide_[narrow_.size()] = v;
    narrow_.push_back(kWide);
  }
  void Set(size_t i, int64_t v) {
    if (Narrow(v) && narrow_[i] != kWide)
      narrow_[i] = static_cast<int32_t>(v);
    else
      SetWide(i, v);
  }
  void Add(size_t i, int64_t delta) { Set(i, (*this)[i] + delta); }
  void reserve(size_t n) { narrow_.reserve(n); }
  // n entries of `v`, which must be Narrow.
  void assign(size_t n, int32_t v) {
    narrow_.assign(n, v);
    wide_.clear();
  }
  // Appends `o`'s values and empties it.
  void Absorb(Int64Column&& o);
  size_t size() const { return narrow_.size(); }
  bool empty() const { return narrow_.empty(); }
  bool operator==(const Int64Column&) const = default;  // the storage is canonical

 private:
  static constexpr int32_t kWide = INT32_MIN;                            // the value is in wide_
  static bool Narrow(int64_t v) { return v > kWide && v <= INT32_MAX; }  // kept in narrow_
  void SetWide(size_t i, int64_t v);  // Set's rare path: a wide value, or was one
  std::vector<int32_t> narrow_;
  std::unordered_map<size_t, int64_t> wide_;
};

// Timestamps in 4 bytes an entry. Times since the epoch need 8 bytes, but a trace's events come
// in time order nearly everywhere, so each block of 1,024 keeps its first time whole and the
// others as an int32 offset from it (±2.1 s). A block with a time further out (the seam between
// a thread's events and the next's, or a trace in no order at all) keeps its times whole, aside:
// never more than 12 bytes an entry. The storage depends only on the values, so == compares
// them. Reads return the int64.
class TimeColumn {
 public:
  int64_t operator[](size_t i) const {
    const int32_t v = offset_[i];
    const int64_t base = base_[i >> kBlockBits];
    return v != kWide ? base + v : whole_[static_cast<size_t>(base) + (i & kBlockMask)];
  }
  void push_back(int64_t v) {
    const size_t i = offset_.size();
    if ((i & kBlockMask) == 0) {  // a block's first time
      base_.push_back(v);
      offset_.push_back(0);
      return;
    }
    int64_t d = 0;  // v - base, unless that overflows (times near INT64's ends)
    if (offset_[i & ~kBlockMask] != kWide && !__builtin_sub_overflow(v, base_.back(), &d) &&
        d > kWide && d <= INT32_MAX)
      offset_.push_back(static_cast<int32_t>(d));
    else
      PushWhole(v);
  }
  void reserve(size_t n) { offset_.reserve(n), base_.reserve((n >> kBlockBits) + 1); }
  size_t size() const { return offset_.size(); }
  bool empty() const { return offset_.empty(); }
  // Adds `d` to every time (baseTimeNanoseconds).
  void Shift(int64_t d);
  // Appends `o`'s times and empties it.
  void Absorb(TimeColumn&& o);
  bool operator==(const TimeColumn&) const = default;

 private:
  static constexpr int kBlockBits = 10;
  static constexpr size_t kBlockMask = (size_t{1} << kBlockBits) - 1;
  static constexpr int32_t kWide = INT32_MIN;  // the block's times are in whole_
  // push_back's rare path: the last block is (or now becomes) one kept whole.
  void PushWhole(int64_t v);
  std::vector<int32_t> offset_;
  std::vector<int64_t> base_;   // per block: its first time, or where it starts in whole_
  std::vector<int64_t> whole_;  // the times of the blocks kept whole, a block after another
};

// "blocks per SM" and "est. achieved occupancy %" of the kernels that have them.
struct KernelStats {
  uint32_t event = 0;  // index in the model
  float blocks_per_sm = std::numeric_limits<float>::quiet_NaN();
  float occupancy_pct = std::numeric_limits<float>::quiet_NaN();
};

// What a cuda_sync "Stream Wait Event" or "Event Sync" waits on (its "wait_on_stream" and, in
// newer Kineto, "wait_on_cuda_event_record_corr_id"): the critical path's event sync edges.
struct SyncWait {
  uint32_t event = 0;               // index in the model
  int64_t stream = -1;              // the stream whose work is waited for
  int64_t record_correlation = -1;  // the cudaEventRecord call's correlation id, -1 if absent
};

// The collective's args PyTorch writes on NCCL kernels and on record_param_comms (a few events
// a trace). Strings are name ids into TraceModel::names, kNoName when absent; numbers kNone.
inline constexpr uint32_t kNoName = UINT32_MAX;
struct CollectiveArgs {
  uint32_t event = 0;                       // index in the model
  uint32_t collective = kNoName;            // "Collective name": "allreduce", "allgather", ...
  uint32_t process_group = kNoName;         // "Process Group Name"
  uint32_t comms_id = kNoName;              // "Comms Id", as text
  uint32_t dtype = kNoName;                 // "dtype": "Float", "BFloat16", ...
  int64_t seq = -1;                         // "Seq"
  int64_t in_nelems = -1, out_nelems = -1;  // "In msg nelems", "Out msg nelems"
  int64_t group_size = -1;                  // "Group size"
};

// One `[memory]` instant event of a trace recorded with profile_memory: an allocation (bytes > 0)
// or a free (bytes < 0) by the caching allocator, with the device's totals after it.
struct MemoryEvent {
  int64_t ts_ns = 0;
  int64_t bytes = 0;                // "Bytes": + allocated, - freed
  int64_t total_allocated = kNone;  // "Total Allocated" after it, kNone when absent
  int64_t total_reserved = kNone;   // "Total Reserved" after it, kNone when absent
  uint64_t addr = 0;                // "Addr", 0 when absent
  uint32_t track = 0;               // index into TraceModel::tracks: the thread that asked
  int8_t device_type = 0;           // "Device Type": 0 CPU, 1 CUDA, ...
  int16_t device_id = -1;           // "Device Id", -1 for the CPU
};

// A cpu_op's "Input Dims" and "Input type" (record_shapes=True), as name ids of their JSON text
// ("[[2, 3], [3, 4]]", "[\"float\", \"float\"]"), and its "Call stack" (older traces recorded
// with with_stack=True); kNoName when absent or empty.
struct OpInputs {
  uint32_t dims = kNoName;
  uint32_t types = kNoName;
  uint32_t stack = kNoName;
  uint32_t concrete = kNoName;  // "Concrete Inputs", kept for convolutions only
  bool operator==(const OpInputs&) const = default;
};

// The distinct OpInputs of a model, each kept once. A training loop calls its operators with the
// same shapes step after step: a 1 GB trace's 922,000 cpu_ops with shapes have 1,151 distinct
// sets, so an op takes 8 bytes (its event and set) where 20 each were 11 MB of a 93 MB model.
class InputSets {
 public:
  // The id of `in`, added when absent.
  uint32_t Intern(const OpInputs& in);
  const OpInputs& operator[](uint32_t id) const { return sets_[id]; }
  size_t size() const { return sets_.size(); }
  auto begin() const { return sets_.begin(); }
  auto end() const { return sets_.end(); }

 private:
  static uint64_t Hash(const OpInputs& in);
  void Grow();

  std::vector<OpInputs> sets_;   // by id
  std::vector<uint32_t> slots_;  // open addressing, at most half full: id + 1, 0 for empty
};

// Where events ran: a process and thread, and for GPU work its device and stream. A trace has a
// few dozen of these, so each event keeps a 4-byte index instead of the four 8-byte values.
struct Track {
  int64_t pid = 0;  // string pids ("Spans") map to TraceModel::kStringIdBase + name id
  int64_t tid = 0;
  int64_t device = -1;  // args.device for GPU events, else -1
  int64_t stream = -1;  // args.stream for GPU events, else -1
  bool operator==(const Track&) const = default;
};

struct TraceModel {
  std::string path;  // the file read
  // The input kind's reader: "kineto" (PyTorch profiler traces, trainprof's own) or "nsys"
  // (an Nsight Systems export); what a section advises to record depends on it.
  std::string source = "kineto";
  int64_t rank = 0;         // distributedInfo.rank, else from the file name, else 0
  std::string rank_source;  // "distributedInfo", "file name" or "default"
  int64_t world_size = 0;   // distributedInfo.world_size, 0 when absent
  std::string backend;      // distributedInfo.backend ("nccl", "gloo", ...)
  std::vector<DeviceInfo> devices;
  // The GPU runtime the trace was taken with: "CUDA" (cuda_runtime_version), "ROCm"
  // (hip_runtime_version, roctracer_version), "" when the trace does not say.
  std::string gpu_runtime;
  bool truncated = false;  // the file ended inside the event list
  int64_t json_bytes = 0;  // bytes of JSON read (after gunzip)
  int read_segments = 1;   // parts of the file parsed in parallel (kineto_reader.cc)
  // baseTimeNanoseconds (Kineto since 2024), already added to every ts_ns; 0 when absent.
  int64_t base_time_ns = 0;

  NameTable names;

  // Complete ("X") events, one entry per array index, in file order.
  TimeColumn ts_ns;
  Int64Column dur_ns;
  std::vector<uint32_t> name;
  std::vector<EventKind> kind;
  std::vector<uint32_t> track;  // index into `tracks`: where the event ran
  Int64Column correlation;      // args.correlation, kNone when absent
  Int64Column external_id;      // args["External id"], kNone when absent
  // For GPU events: index of the runtime event with the same correlation id, else -1.
  std::vector<int32_t> launcher;

  std::vector<Track> tracks;                    // distinct; `track` indexes it
  std::vector<KernelStats> kernel_stats;        // sorted by event; few events have them
  std::vector<CollectiveArgs> collective_args;  // sorted by event
  std::vector<SyncWait> sync_waits;             // sorted by event
  std::string host_name;  // top-level "hostname" / distributedInfo "host_name"; empty if absent

  std::vector<MemoryEvent> memory_events;  // [memory] instants, sorted by ts_ns
  // cpu_ops with shapes or a stack only: (event, id in input_sets), sorted by event.
  std::vector<std::pair<uint32_t, uint32_t>> op_inputs;
  InputSets input_sets;
  // The "bytes" arg of memcpy and memset events, (event, bytes), sorted by event.
  std::vector<std::pair<uint32_t, int64_t>> memcpy_bytes;
  // Their "memory bandwidth (GB/s)" arg as Kineto wrote it, (event, GB/s), sorted by event.
  std::vector<std::pair<uint32_t, double>> memory_bw;
  // CUPTI's range-profiler metrics of cuda_profiler_range events (HTA's counter analysis),
  // sorted by event: the metric's name id and its value.
  struct RangeCounter {
    uint32_t event = 0, name = 0;
    double value = 0;
    bool operator==(const RangeCounter&) const = default;
  };
  std::vector<RangeCounter> range_counters;
  // CPU ops with an integer "stream" kwarg (Inductor's Triton launches), (event, stream), sorted
  // by event: not GPU work, but HTA counts them as kernels on that stream (--hta-compat does too).
  std::vector<std::pair<uint32_t, int64_t>> host_streams;
  // A launch call's "kernel" arg (ROCm writes it), (event, name id), sorted by event: in a graph
  // capture trace, where no kernel runs, the only record of what each launch captured.
  std::vector<std::pair<uint32_t, uint32_t>> launch_kernels;
  // Graph kernels mapped to a launch call among the operators copied from the graph's capture
  // trace (graph_capture.h), (kernel, launch call), sorted by kernel: the operator tree credits
  // the kernel to that call's operator instead of the graph launch.
  std::vector<std::pair<uint32_t, uint32_t>> captured_launcher;
  // Each range and launch call copied from a capture trace with the graph launch call it was
  // copied into, (event, call), sorted by event: the operator tree nests the copy's outermost
  // events under the range around that call, so a module or operator around a graph replay
  // covers its work.
  std::vector<std::pair<uint32_t, uint32_t>> captured_in;
  // The graph capture traces offered (graph_capture.h; -1: none looked for) and why the first
  // graph launch that matched none of their windows did not ("": every launch matched).
  struct GraphCaptureMiss {
    int64_t captures = -1;
    std::string why;
  } graph_capture;

  std::vector<base::Diagnostic> diagnostics;
  // Peak of "Total Allocated" in the profiler's [memory] instant events, per device id (-1: CPU).
  std::vector<std::pair<int64_t, int64_t>> peak_allocated_bytes;

  static constexpr int64_t kStringIdBase = int64_t{1} << 40;

  size_t size() const { return ts_ns.size(); }
  int64_t end_ns(size_t i) const { return ts_ns[i] + dur_ns[i]; }
  const std::string& name_of(size_t i) const { return names[name[i]]; }
  int64_t pid_of(size_t i) const { return tracks[track[i]].pid; }
  int64_t tid_of(size_t i) const { return tracks[track[i]].tid; }
  int64_t device_of(size_t i) const { return tracks[track[i]].device; }
  int64_t stream_of(size_t i) const { return tracks[track[i]].stream; }
  // NaN when the event has none.
  float blocks_per_sm_of(size_t i) const { return StatsOf(i).blocks_per_sm; }
  float occupancy_pct_of(size_t i) const { return StatsOf(i).occupancy_pct; }
  KernelStats StatsOf(size_t i) const;
  // nullptr when event i has no collective args.
  const CollectiveArgs* CollectiveOf(size_t i) const;
  // nullptr when event i is not a sync that names what it waits on.
  const SyncWait* SyncWaitOf(size_t i) const;
  const DeviceInfo* FindDevice(int64_t id) const;
  // nullptr when event i has no input shapes.
  const OpInputs* InputsOf(size_t i) const;
  // Event i's id in input_sets, kNoName when it has none.
  uint32_t InputSetOf(size_t i) const;
  // Appends event i's inputs to op_inputs (events in increasing order).
  void AddInputs(uint32_t i, const OpInputs& in) {
    op_inputs.emplace_back(i, input_sets.Intern(in));
  }
  // The memcpy's "bytes" arg, kNone when absent.
  int64_t MemcpyBytesOf(size_t i) const;
  // The memcpy's or memset's "memory bandwidth (GB/s)", NaN when the trace does not give it.
  double MemoryBwOf(size_t i) const;
  // The stream kwarg of CPU op i (host_streams), -1 when it has none.
  int64_t HostStreamOf(size_t i) const;
  // The kernel name id launch call i carries (launch_kernels), kNoName when none.
  uint32_t LaunchKernelOf(size_t i) const;
  // The launch call credited with graph kernel i (captured_launcher), else launcher[i].
  int32_t OwnLauncherOf(size_t i) const;
  // The graph launch call range i was copied into (captured_in), else -1.
  int32_t CapturedInOf(size_t i) const;

  // The index of `t` in `tracks`, added when absent (a linear search: tracks are few).
  uint32_t FindOrAddTrack(const Track& t);
  // `t` (a track of another model) with its string pid and tid moved to this model's name ids;
  // `names` maps the other model's name ids to this one's.
  static Track MapTrackNames(Track t, const std::vector<uint32_t>& names);

  // Appends an event with no args that ran on tracks[where]; the reader uses it. Returns its index.
  size_t Add(EventKind k, std::string_view event_name, int64_t ts, int64_t dur, uint32_t where);
  // Appends `o`'s events (read from a later part of the same file) and empties it, one column at
  // a time. `names` and `tracks` map o's name and track ids to this model's.
  void Absorb(TraceModel&& o, const std::vector<uint32_t>& names,
              const std::vector<uint32_t>& tracks);
  // Before absorbing `parts` one after another: room in every column for all of them, so that
  // no column is copied again for each part (quadratic in the number of parts).
  void ReserveFor(const std::vector<const TraceModel*>& parts);
  // Room for `n` events in the event columns before reading: the columns are not copied as
  // they grow, nor their pages faulted twice. Room not used is never touched, so it costs
  // address space, not memory.
  void ReserveEvents(size_t n);
  // Fills `launcher` from correlation ids. Called once after the last Add.
  void LinkLaunches();
  // Name and severity are the registry's (base/diagnostics.h).
  void AddDiagnostic(base::DiagnosticName name, int64_t count, std::string message);
};

}  // namespace trainprof::trace
