#include "trace/kineto/kineto_builder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>

#include "base/radix_sort.h"
#include "base/text.h"
#include "trace/devices.h"
#include "trace/model_finish.h"
#include "trace/read_options.h"

namespace trainprof::trace {

using json::MicrosToNs;
using json::Scalar;
using json::ToDouble;
using json::ToInt;

namespace {

int64_t OptionalInt(const json::Scalar& s) {
  if (s.type != json::Scalar::kNumber) return kNone;
  return json::ToInt(s.text).value_or(kNone);
}

EventKind KindOf(std::string_view cat, bool* known) {
  *known = true;
  // Today's Kineto names, then the pre-2021 ones, then AMD's.
  if (json::KeyIs(cat, "cpu_op") || json::KeyIs(cat, "Operator")) return EventKind::kCpuOp;
  // MTIA's device events (its kernels, and its DMA requests on the same streams) are what HTA
  // takes as kernels on those streams.
  if (json::KeyIs(cat, "kernel") || json::KeyIs(cat, "Kernel") ||
      json::KeyIs(cat, "mtia_ccp_events"))
    return EventKind::kKernel;
  if (json::KeyIs(cat, "cuda_runtime") || json::KeyIs(cat, "Runtime") ||
      json::KeyIs(cat, "hip_runtime") || json::KeyIs(cat, "xpu_runtime") ||
      json::KeyIs(cat, "privateuse1_runtime") || json::KeyIs(cat, "mtia_runtime"))
    return EventKind::kRuntime;
  if (json::KeyIs(cat, "cuda_driver") || json::KeyIs(cat, "hip_driver") ||
      json::KeyIs(cat, "xpu_driver") || json::KeyIs(cat, "privateuse1_driver"))
    return EventKind::kDriver;
  if (json::KeyIs(cat, "user_annotation")) return EventKind::kUserAnnotation;
  if (json::KeyIs(cat, "gpu_memcpy") || json::KeyIs(cat, "Memcpy")) return EventKind::kMemcpy;
  if (json::KeyIs(cat, "gpu_memset") || json::KeyIs(cat, "Memset")) return EventKind::kMemset;
  if (json::KeyIs(cat, "python_function")) return EventKind::kPythonFunction;
  if (json::KeyIs(cat, "gpu_user_annotation")) return EventKind::kGpuUserAnnotation;
  if (json::KeyIs(cat, "Trace")) return EventKind::kSpan;
  if (json::KeyIs(cat, "trainprof")) return EventKind::kCpuOp;  // trainprof's own scopes
  // Known categories no analysis uses.
  *known = json::KeyIs(cat, "overhead") || json::KeyIs(cat, "cpu_instant_event") ||
           json::KeyIs(cat, "python") || json::KeyIs(cat, "cuda_profiler_range") ||
           json::KeyIs(cat, "cuda_sync") || json::KeyIs(cat, "cuda_event") ||
           json::KeyIs(cat, "mtia_insight") || json::KeyIs(cat, "glow_runtime") ||
           json::KeyIs(cat, "hpu_op") || json::KeyIs(cat, "collective_comm") ||
           json::KeyIs(cat, "xpu_sync");
  return EventKind::kOther;
}

}  // namespace

Scalar* ArgTarget(std::string_view key, RawEvent* ev) {
  switch (key.size()) {  // by length first: most args are none of these
    case 3:
      return json::KeyIs(key, "Seq") ? &ev->seq : nullptr;
    case 4:
      return json::KeyIs(key, "Addr") ? &ev->addr : nullptr;
    case 5:
      return json::KeyIs(key, "Bytes")   ? &ev->bytes
             : json::KeyIs(key, "dtype") ? &ev->dtype
             : json::KeyIs(key, "bytes") ? &ev->memcpy_bytes
                                         : nullptr;
    case 6:
      return json::KeyIs(key, "stream")   ? &ev->stream
             : json::KeyIs(key, "device") ? &ev->device
             : json::KeyIs(key, "kernel") ? &ev->launch_kernel
                                          : nullptr;
    case 8:
      return json::KeyIs(key, "inDevice")   ? &ev->in_device
             : json::KeyIs(key, "Comms Id") ? &ev->comms_id
                                            : nullptr;
    case 9:
      return json::KeyIs(key, "Device Id") ? &ev->device_id : nullptr;
    case 10:
      return json::KeyIs(key, "Group size")   ? &ev->group_size
             : json::KeyIs(key, "Input Dims") ? &ev->input_dims
             : json::KeyIs(key, "Input type") ? &ev->input_types
             : json::KeyIs(key, "Call stack") ? &ev->call_stack
                                              : nullptr;
    case 11:
      return json::KeyIs(key, "correlation")   ? &ev->correlation
             : json::KeyIs(key, "External id") ? &ev->external_id
             : json::KeyIs(key, "Device Type") ? &ev->device_type
                                               : nullptr;
    case 13:
      return json::KeyIs(key, "blocks per SM")   ? &ev->blocks_per_sm
             : json::KeyIs(key, "In msg nelems") ? &ev->in_nelems
                                                 : nullptr;
    case 14:
      return json::KeyIs(key, "Out msg nelems")   ? &ev->out_nelems
             : json::KeyIs(key, "wait_on_stream") ? &ev->wait_on_stream
             : json::KeyIs(key, "Total Reserved") ? &ev->total_reserved
                                                  : nullptr;
    case 15:
      return json::KeyIs(key, "Total Allocated")   ? &ev->total_allocated
             : json::KeyIs(key, "Collective name") ? &ev->coll_name
             : json::KeyIs(key, "Concrete Inputs") ? &ev->concrete_inputs
                                                   : nullptr;
    case 18:
      return json::KeyIs(key, "Process Group Name") ? &ev->pg_name : nullptr;
    case 23:
      return json::KeyIs(key, "memory bandwidth (GB/s)") ? &ev->memory_bw : nullptr;
    case 25:
      return json::KeyIs(key, "est. achieved occupancy %") ? &ev->occupancy : nullptr;
    case 33:
      return json::KeyIs(key, "wait_on_cuda_event_record_corr_id") ? &ev->wait_on_record : nullptr;
    default:
      return nullptr;
  }
}

EventBuilder::EventBuilder(std::string name) : name_(std::move(name)) { m_.path = name_; }

void EventBuilder::Count(base::DiagnosticId id, std::string example, std::string_view detail) {
  std::string key(base::KindOf(id).name);
  if (id == base::DiagnosticId::kUnknownCategory) key.append(":").append(detail);
  auto [it, fresh] = counts_.try_emplace(std::move(key), Counted{id, 0, {}});
  if (it->second.count++ == 0) it->second.example = std::move(example);
}

void EventBuilder::Absorb(EventBuilder&& o) {
  std::vector<uint32_t> names(o.m_.names.size());
  for (uint32_t i = 0; i < names.size(); ++i) names[i] = m_.names.Intern(o.m_.names[i]);
  std::vector<uint32_t> tracks(o.m_.tracks.size());
  for (size_t i = 0; i < tracks.size(); ++i)
    tracks[i] = TrackOf(TraceModel::MapTrackNames(o.m_.tracks[i], names));
  m_.Absorb(std::move(o.m_), names, tracks);
  events_seen_ += o.events_seen_;
  for (auto& [diag, c] : o.counts_) {
    auto [it, fresh] = counts_.try_emplace(diag, c);
    if (!fresh) it->second.count += c.count;
  }
  flow_starts_.insert(flow_starts_.end(), o.flow_starts_.begin(), o.flow_starts_.end());
  flow_ends_.insert(flow_ends_.end(), o.flow_ends_.begin(), o.flow_ends_.end());
  memory_deltas_.insert(memory_deltas_.end(), o.memory_deltas_.begin(), o.memory_deltas_.end());
  std::vector<int64_t>().swap(o.flow_starts_);  // `o` lives on until the read returns
  std::vector<int64_t>().swap(o.flow_ends_);
  std::vector<MemoryDelta>().swap(o.memory_deltas_);
  for (auto [mine, theirs] : {std::pair{&distributed_info_, &o.distributed_info_},
                              {&device_properties_, &o.device_properties_},
                              {&base_time_, &o.base_time_},
                              {&host_name_, &o.host_name_}})
    if (!theirs->empty()) *mine = std::move(*theirs);
  if (!o.m_.gpu_runtime.empty()) m_.gpu_runtime = std::move(o.m_.gpu_runtime);
}

void EventBuilder::TopValue(std::string_view key, std::string_view text) {
  if (key == "distributedInfo") distributed_info_.assign(text);
  if (key == "deviceProperties") device_properties_.assign(text);
  if (key == "baseTimeNanoseconds") base_time_.assign(text);
  if (key == "hostname" || key == "host_name") host_name_.assign(text);
  if (key == "cuda_runtime_version" || key == "cupti_version") m_.gpu_runtime = "CUDA";
  if (key == "hip_runtime_version" || key == "roctracer_version") m_.gpu_runtime = "ROCm";
}

void EventBuilder::Add(const RawEvent& ev) {
  ++events_seen_;
  if (ev.ph.type != Scalar::kString) {
    Count(base::DiagnosticId::kMissingFields, "an event without \"ph\"");
    return;
  }
  std::string_view ph = ev.ph.text;
  if (json::KeyIs(ph, "s") || json::KeyIs(ph, "f") || json::KeyIs(ph, "t")) return AddFlow(ev, ph);
  if ((json::KeyIs(ph, "i") || json::KeyIs(ph, "I")) && json::KeyIs(ev.name.text, "[memory]") &&
      AddMemory(ev))
    return;
  if (json::KeyIs(ph, "X")) AddComplete(ev);  // metadata, counters, other instants: not analysed
}

void EventBuilder::AddFlow(const RawEvent& ev, std::string_view ph) {
  if (!json::KeyIs(ev.cat.text, "ac2g") && !json::KeyIs(ev.cat.text, "async_cpu_to_gpu")) return;
  std::optional<int64_t> id;
  if (ev.id.type == Scalar::kNumber || ev.id.type == Scalar::kString) id = ToInt(ev.id.text);
  if (!id) {
    Count(base::DiagnosticId::kMissingFields, "a flow event without a numeric \"id\"");
    return;
  }
  (ph == "s" ? flow_starts_ : flow_ends_).push_back(*id);
}

// [memory] instants: the peak of Total Allocated per device, or, in older traces with only the
// Bytes of each allocation or free, the deltas to rebuild the curve from at the end.
bool EventBuilder::AddMemory(const RawEvent& ev) {
  int64_t dev = ev.device_id.type == Scalar::kNumber ? ToInt(ev.device_id.text).value_or(-1) : -1;
  const bool numbers = ev.ts.type == Scalar::kNumber && ev.bytes.type == Scalar::kNumber;
  const std::optional<int64_t> ts = numbers ? MicrosToNs(ev.ts.text) : std::nullopt;
  const std::optional<int64_t> bytes = numbers ? ToInt(ev.bytes.text) : std::nullopt;
  if (ts && bytes) KeepMemoryEvent(ev, dev, *ts, *bytes);
  if (ev.total_allocated.type != Scalar::kNumber) {
    if (!numbers) return false;
    if (ts && bytes) memory_deltas_.push_back({dev, *ts, *bytes});
    return true;
  }
  RaisePeak(m_, dev, ToInt(ev.total_allocated.text).value_or(0));
  return true;
}

// The event itself, for the Memory view: what it needs and nothing else.
void EventBuilder::KeepMemoryEvent(const RawEvent& ev, int64_t dev, int64_t ts_ns, int64_t bytes) {
  MemoryEvent e;
  e.ts_ns = ts_ns;
  e.bytes = bytes;
  e.total_allocated = OptionalInt(ev.total_allocated);
  e.total_reserved = OptionalInt(ev.total_reserved);
  e.addr =
      static_cast<uint64_t>(ev.addr.type == Scalar::kNumber ? ToInt(ev.addr.text).value_or(0) : 0);
  e.track = TrackOf(Track{IdOf(ev.pid), IdOf(ev.tid)});
  e.device_type = static_cast<int8_t>(std::clamp<int64_t>(OptionalInt(ev.device_type), -1, 127));
  e.device_id = static_cast<int16_t>(std::clamp<int64_t>(dev, -1, 32767));
  m_.memory_events.push_back(e);
}

// A cpu_op's input shapes and a memcpy's bytes: the MFU and bandwidth views read them.
void EventBuilder::AddOpArgs(const RawEvent& ev, EventKind k, size_t i) {
  const auto index = static_cast<uint32_t>(i);
  if (k == EventKind::kMemcpy || k == EventKind::kMemset) {
    if (ev.memcpy_bytes.type == Scalar::kNumber)
      if (auto b = ToInt(ev.memcpy_bytes.text)) m_.memcpy_bytes.emplace_back(index, *b);
    if (ev.memory_bw.type == Scalar::kNumber)
      m_.memory_bw.emplace_back(index, ToDouble(ev.memory_bw.text));
    return;
  }
  for (const auto& [key, value] : ev.counters)
    m_.range_counters.push_back({index, m_.names.Intern(key), ToDouble(value)});
  if ((k == EventKind::kRuntime || k == EventKind::kDriver) &&
      ev.launch_kernel.type == Scalar::kString) {
    m_.launch_kernels.emplace_back(index, m_.names.Intern(ev.launch_kernel.text));
    return;
  }
  if (k != EventKind::kCpuOp) return;
  const bool dims = ev.input_dims.type == Scalar::kOtherValue;
  const bool stack = ev.call_stack.type == Scalar::kString && !ev.call_stack.text.empty();
  if (!dims && !stack) return;
  OpInputs in;
  if (dims) in.dims = m_.names.Intern(ev.input_dims.text);
  if (dims && ev.input_types.type == Scalar::kOtherValue)
    in.types = m_.names.Intern(ev.input_types.text);
  if (stack) in.stack = m_.names.Intern(ev.call_stack.text);
  // A convolution's stride and padding (its output size, so its FLOPs); other operators'
  // scalars are not read, so they cost no interning.
  if (dims && ev.concrete_inputs.type == Scalar::kOtherValue &&
      ev.name.text.find("conv") != std::string_view::npos)
    in.concrete = m_.names.Intern(ev.concrete_inputs.text);
  m_.AddInputs(index, in);
}

void EventBuilder::AddComplete(const RawEvent& ev) {
  if (ev.ts.type != Scalar::kNumber || ev.dur.type != Scalar::kNumber ||
      ev.name.type != Scalar::kString) {
    Count(base::DiagnosticId::kMissingFields,
          fmt::format("\"{}\" lacks {}", base::Ellipsize(ev.name.text, 60),
                      ev.name.type != Scalar::kString ? "a name"
                      : ev.ts.type != Scalar::kNumber ? "a numeric ts"
                                                      : "a numeric dur"));
    return;
  }
  std::optional<int64_t> ts = MicrosToNs(ev.ts.text);
  std::optional<int64_t> dur = MicrosToNs(ev.dur.text);
  if (!ts || !dur || *dur < 0) {
    Count(base::DiagnosticId::kBadTime,
          fmt::format("\"{}\" has ts {} and dur {}", base::Ellipsize(ev.name.text, 60), ev.ts.text,
                      ev.dur.text));
    return;
  }
  bool known = true;
  EventKind k = EventKind::kOther;
  if (ev.cat.type == Scalar::kString) {
    k = KindOf(ev.cat.text, &known);
    if (!known)
      Count(base::DiagnosticId::kUnknownCategory, base::Ellipsize(ev.name.text, 60), ev.cat.text);
  } else if (ev.pid.type == Scalar::kString && json::KeyIs(ev.pid.text, "CPU functions")) {
    // The legacy autograd profiler's export (torch without Kineto, e.g. Debian's 1.13): a bare
    // array of operators with no "cat", all under the pid "CPU functions".
    k = EventKind::kCpuOp;
    Count(base::DiagnosticId::kTorchProfilerLegacy, base::Ellipsize(ev.name.text, 60));
  } else {
    Count(base::DiagnosticId::kUnknownCategory, base::Ellipsize(ev.name.text, 60));
  }
  // An MTIA device event without a stream (some DMA requests) is on no queue: HTA leaves it
  // out of its kernels, and so do we.
  if (k == EventKind::kKernel && ev.stream.type == Scalar::kNone &&
      json::KeyIs(ev.cat.text, "mtia_ccp_events"))
    k = EventKind::kOther;
  if (ev.cat.text == "cuda_profiler_range")
    Count(base::DiagnosticId::kProfilerRange, base::Ellipsize(ev.name.text, 60));
  Track where{IdOf(ev.pid), IdOf(ev.tid)};
  PlaceGpuWork(ev, k, &where);
  size_t i = m_.Add(k, ev.name.text, *ts, *dur, TrackOf(where));
  if (k == EventKind::kCpuOp && ev.stream.type == Scalar::kNumber)
    if (auto s = ToInt(ev.stream.text)) m_.host_streams.emplace_back(static_cast<uint32_t>(i), *s);
  if (!ev.has_args) return;
  m_.correlation.Set(i, OptionalInt(ev.correlation));
  m_.external_id.Set(i, OptionalInt(ev.external_id));
  AddCollectiveArgs(ev, i);
  AddSyncWait(ev, i);
  AddOpArgs(ev, k, i);
  if (where.stream == -1 && where.device == -1) return;  // not GPU work
  if (ev.blocks_per_sm.type != Scalar::kNumber && ev.occupancy.type != Scalar::kNumber) return;
  KernelStats stats{static_cast<uint32_t>(i)};
  if (ev.blocks_per_sm.type == Scalar::kNumber)
    stats.blocks_per_sm = static_cast<float>(ToDouble(ev.blocks_per_sm.text));
  if (ev.occupancy.type == Scalar::kNumber)
    stats.occupancy_pct = static_cast<float>(ToDouble(ev.occupancy.text));
  m_.kernel_stats.push_back(stats);
}

void EventBuilder::AddCollectiveArgs(const RawEvent& ev, size_t i) {
  if (ev.coll_name.type == Scalar::kNone && ev.pg_name.type == Scalar::kNone &&
      ev.seq.type == Scalar::kNone && ev.in_nelems.type == Scalar::kNone)
    return;
  auto text = [&](const Scalar& s) {
    return s.type == Scalar::kString || s.type == Scalar::kNumber ? m_.names.Intern(s.text)
                                                                  : kNoName;
  };
  CollectiveArgs c{static_cast<uint32_t>(i)};
  c.collective = text(ev.coll_name);
  c.process_group = text(ev.pg_name);
  c.comms_id = text(ev.comms_id);
  c.dtype = text(ev.dtype);
  c.seq = OptionalInt(ev.seq);
  c.in_nelems = OptionalInt(ev.in_nelems);
  c.out_nelems = OptionalInt(ev.out_nelems);
  c.group_size = OptionalInt(ev.group_size);
  m_.collective_args.push_back(c);
}

void EventBuilder::AddSyncWait(const RawEvent& ev, size_t i) {
  if (ev.wait_on_stream.type != Scalar::kNumber) return;
  m_.sync_waits.push_back(
      {static_cast<uint32_t>(i), OptionalInt(ev.wait_on_stream), OptionalInt(ev.wait_on_record)});
}

int64_t EventBuilder::IdOf(const Scalar& s) {
  if (s.type == Scalar::kNumber) return ToInt(s.text).value_or(0);
  if (s.type != Scalar::kString) return 0;
  // A thread written as "1234" in some events and 1234 in others is one thread (a string that
  // is a whole number is that number); names ("stream 7", "python") are name ids.
  if (auto v = ToInt(s.text); v && s.text.find_first_of(".eE") == std::string_view::npos) return *v;
  return TraceModel::kStringIdBase + m_.names.Intern(s.text);
}

// The device and stream of GPU events, and of the odd CPU-side event with a stream (cuda_sync's
// "Stream Sync"). A CPU op's "stream" is a kwarg (Inductor's Triton launches), not where it ran.
void EventBuilder::PlaceGpuWork(const RawEvent& ev, EventKind k, Track* where) {
  bool host =
      k == EventKind::kCpuOp || k == EventKind::kUserAnnotation || k == EventKind::kPythonFunction;
  if (ev.has_args && !host &&
      (ev.stream.type != Scalar::kNone || ev.device.type != Scalar::kNone)) {
    where->device = OptionalInt(ev.device);  // kNone is -1
    where->stream = OptionalInt(ev.stream);
  }
  if (!IsGpuKind(k)) return;
  if (where->device == -1) {  // a peer-to-peer copy names inDevice; else the pid is the GPU
    where->device = OptionalInt(ev.in_device);
    if (where->device == -1 && ev.pid.type == Scalar::kNumber) where->device = where->pid;
  }
  if (where->stream >= 0) return;
  // Kineto puts the stream in args; old traces only in tid ("stream 7").
  int64_t t = where->tid;
  if (t >= TraceModel::kStringIdBase) {
    const std::string& tn = m_.names[static_cast<uint32_t>(t - TraceModel::kStringIdBase)];
    size_t pos = tn.find_first_of("0123456789");
    if (pos != std::string::npos) t = ToInt(std::string_view(tn).substr(pos)).value_or(-1);
  }
  where->stream = t >= 0 ? t : -1;
}

// Tracks are few: the last one usually matches, else a hash lookup.
uint32_t EventBuilder::TrackOf(const Track& t) {
  if (last_track_ < m_.tracks.size() && m_.tracks[last_track_] == t) return last_track_;
  auto [it, added] = track_index_.try_emplace(t, static_cast<uint32_t>(m_.tracks.size()));
  if (added) m_.tracks.push_back(t);
  return last_track_ = it->second;
}

void EventBuilder::ReadTopValue(std::string_view key, std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    m_.AddDiagnostic(base::DiagnosticId::kBadMetadata, 1,
                     fmt::format("{}: \"{}\" could not be read", name_, key));
    return;
  }
  // An integer, or a float that is one within int64's range; anything else is as if absent (a
  // rank of 1e24 read as a float and cast to int64 was undefined behaviour: the fuzzer's find).
  auto get_int = [](const nlohmann::json& o, const char* k) -> std::optional<int64_t> {
    auto it = o.find(k);
    if (it == o.end() || !it->is_number()) return std::nullopt;
    if (it->is_number_integer()) return it->get<int64_t>();
    const double x = it->get<double>();
    if (!(std::fabs(x) < 9.2e18) || x != std::trunc(x)) return std::nullopt;
    return static_cast<int64_t>(x);
  };
  if (key == "distributedInfo" && j.is_object()) {
    if (auto r = get_int(j, "rank")) {
      m_.rank = *r;
      m_.rank_source = "distributedInfo";
    }
    m_.world_size = get_int(j, "world_size").value_or(0);
    if (j.contains("backend") && j["backend"].is_string()) m_.backend = j["backend"];
    if (j.contains("host_name") && j["host_name"].is_string()) m_.host_name = j["host_name"];
  } else if (key == "deviceProperties" && j.is_array()) {
    for (const auto& d : j) {
      if (!d.is_object()) continue;
      DeviceInfo info;
      info.id = get_int(d, "id").value_or(-1);
      if (d.contains("name") && d["name"].is_string()) info.name = d["name"];
      info.total_memory_bytes = get_int(d, "totalGlobalMem").value_or(0);
      info.compute_major = get_int(d, "computeMajor").value_or(0);
      info.compute_minor = get_int(d, "computeMinor").value_or(0);
      info.num_sms = get_int(d, "numSms").value_or(0);
      info.max_threads_per_sm = get_int(d, "maxThreadsPerMultiprocessor").value_or(0);
      m_.devices.push_back(std::move(info));
    }
  }
}

TraceModel EventBuilder::Finish() {
  if (!distributed_info_.empty()) ReadTopValue("distributedInfo", distributed_info_);
  if (!device_properties_.empty()) ReadTopValue("deviceProperties", device_properties_);
  if (!host_name_.empty()) m_.host_name = host_name_;
  NameRank(m_, name_);
  ApplyBaseTime();
  ReportCounts();
  CheckFlows();
  FinishModel(m_, name_, std::move(memory_deltas_));
  return std::move(m_);
}

// Kineto since 2024 writes each ts as µs after baseTimeNanoseconds (Unix ns), before or after
// the events; older traces hold µs since the epoch. Adding the base puts both on the epoch.
void EventBuilder::ApplyBaseTime() {
  if (base_time_.empty()) return;
  std::optional<int64_t> base = ToInt(base_time_);
  if (!base || *base < 0) {
    m_.AddDiagnostic(base::DiagnosticId::kBadMetadata, 1,
                     fmt::format("{}: baseTimeNanoseconds {} is not a time; times are left "
                                 "relative to it",
                                 name_, base::Ellipsize(base_time_, 40)));
    return;
  }
  m_.base_time_ns = *base;
  m_.ts_ns.Shift(*base);
  for (MemoryDelta& d : memory_deltas_) d.ts_ns += *base;
  for (MemoryEvent& e : m_.memory_events) e.ts_ns += *base;
}

void EventBuilder::ReportCounts() {
  using base::DiagnosticId;
  for (auto& [key, c] : counts_) {
    std::string msg;
    if (c.id == DiagnosticId::kMissingFields)
      msg = fmt::format("{}: {} events lack required fields and were skipped (e.g. {})", name_,
                        c.count, c.example);
    else if (c.id == DiagnosticId::kProfilerRange)
      msg = fmt::format(
          "{}: {} cuda_profiler_range events (CUPTI's range profiler: counters per range, with "
          "made-up times) were kept as other; the trace has no GPU timeline, so it reads as "
          "CPU-only (e.g. {})",
          name_, c.count, c.example);
    else if (c.id == DiagnosticId::kTorchProfilerLegacy)
      msg = fmt::format(
          "{}: a legacy (non-Kineto) profiler trace: {} operators under \"CPU functions\", no "
          "GPU timeline or input shapes (e.g. {})",
          name_, c.count, c.example);
    else if (c.id == DiagnosticId::kBadTime)
      msg = fmt::format(
          "{}: {} events have a negative, NaN or infinite time and were skipped "
          "(e.g. {})",
          name_, c.count, c.example);
    else
      msg = fmt::format("{}: {} events of unknown category \"{}\" kept as \"other\" (e.g. {})",
                        name_, c.count, key.substr(key.find(':') + 1), c.example);
    m_.AddDiagnostic(c.id, c.count, std::move(msg));
  }
}

// Flows pair a runtime call ("s") with the GPU work it launched ("f") by id.
void EventBuilder::CheckFlows() {
  const auto id = [](int64_t v) { return v; };
  base::RadixSortBy(flow_starts_, id);
  base::RadixSortBy(flow_ends_, id);
  std::vector<int64_t> odd;  // room made once, here and below: doubling faulted each twice
  odd.reserve(flow_starts_.size() + flow_ends_.size());
  std::set_symmetric_difference(flow_starts_.begin(), flow_starts_.end(), flow_ends_.begin(),
                                flow_ends_.end(), std::back_inserter(odd));
  std::vector<int64_t>().swap(flow_starts_);
  std::vector<int64_t>().swap(flow_ends_);
  // Older Kineto writes one flow end per runtime call, with no start: that is fine as long as an
  // event carries the same correlation id, each such event excusing one odd flow. Counted per
  // distinct odd id. The events' ids come nearly in order through the file, so each is looked up
  // from where the last one was found: no copy of them, and no sort (on the 1 GB trace a sorted
  // copy cost 19 MB and 20 ms).
  std::vector<int64_t> ids;   // distinct odd ids, ascending
  std::vector<int64_t> left;  // odd flows of each id not yet excused
  ids.reserve(odd.size()), left.reserve(odd.size());
  for (int64_t id : odd) {
    if (ids.empty() || ids.back() != id) ids.push_back(id), left.push_back(0);
    ++left.back();
  }
  std::vector<int64_t>().swap(odd);
  if (!ids.empty()) {
    size_t k = 0;
    for (size_t i = 0; i < m_.correlation.size(); ++i) {
      const int64_t c = m_.correlation[i];
      if (c == kNone) continue;
      k = base::GallopLowerBound(ids, k, c, std::less<int64_t>());
      if (k < ids.size() && ids[k] == c) --left[k];
    }
  }
  int64_t unpaired = 0, example = 0;
  for (size_t k = 0; k < ids.size(); ++k) {
    if (left[k] <= 0) continue;
    if (unpaired == 0) example = ids[k];
    unpaired += left[k];
  }
  if (unpaired > 0)
    m_.AddDiagnostic(base::DiagnosticId::kUnpairedFlows, unpaired,
                     fmt::format("{}: {} CPU-to-GPU flow events have no partner and match no "
                                 "event's correlation id (e.g. id {}); they are ignored",
                                 name_, unpaired, example));
}

// Devices whose [memory] events carry only Bytes deltas: the allocated curve is their running
// sum in time order, from 0 at the trace's start, and its peak is the device's peak. Devices
// with Total Allocated keep that.

}  // namespace trainprof::trace
