#include "trace/inprocess/inprocess_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "trace/model_finish.h"

namespace trainprof::trace {
namespace {

class InProcessBuilder {
 public:
  explicit InProcessBuilder(const InProcessRecording& r) : r_(r) {
    m_.path = r.label;
    m_.source = "trainprof";
    m_.base_time_ns = r.base_time_ns;
    if (r.rank >= 0) {
      m_.rank = r.rank;
      m_.rank_source = "trainprof session";
      m_.world_size = r.world_size;
    }
  }

  TraceModel Build() {
    AddSteps();
    if (r_.ops != nullptr) AddOps(*r_.ops);
    if (r_.gpu != nullptr) AddGpu(*r_.gpu);
    NameRank(m_, m_.path);
    FinishModel(m_, m_.path, {});
    return std::move(m_);
  }

 private:
  int64_t Unix(int64_t t_ns) const { return r_.base_time_ns + t_ns; }
  bool Overlaps(int64_t begin, int64_t end) const { return begin < r_.to_ns && end > r_.from_ns; }
  bool Inside(int64_t t) const { return t >= r_.from_ns && t < r_.to_ns; }

  uint32_t HostTrack(int64_t tid) { return m_.FindOrAddTrack({r_.pid, tid, -1, -1}); }

  void AddSteps() {
    for (const InProcessStep& s : r_.steps) {
      m_.Add(EventKind::kUserAnnotation, fmt::format("ProfilerStep#{}", s.number), Unix(s.begin_ns),
             s.end_ns - s.begin_ns, HostTrack(s.tid));
    }
  }

  void AddOps(const torchlib::OpData& d) {
    m_.ReserveEvents(m_.size() + d.ops.size());
    for (const torchlib::OpEvent& e : d.ops) {
      if (!Overlaps(e.begin_ns, e.begin_ns + std::max<int64_t>(e.dur_ns, 1))) continue;
      const size_t i =
          m_.Add(EventKind::kCpuOp, d.names[e.name], Unix(e.begin_ns), e.dur_ns, HostTrack(e.tid));
      if (e.id != 0) m_.external_id.Set(i, static_cast<int64_t>(e.id));
      if (e.shapes != 0 && e.shapes < d.shapes.size()) {
        OpInputs in;
        in.dims = m_.names.Intern(d.shapes[e.shapes]);
        m_.AddInputs(static_cast<uint32_t>(i), in);
      }
    }
    for (const torchlib::MemEvent& e : d.mem)
      if (Inside(e.t_ns)) AddMemory(e);
  }

  // A [memory] event as Kineto writes one: Device Type, Device Id (-1 for the CPU), Bytes,
  // Total Allocated and Total Reserved after it; the device's peak of Total Allocated.
  void AddMemory(const torchlib::MemEvent& e) {
    MemoryEvent out;
    out.ts_ns = Unix(e.t_ns);
    out.bytes = e.bytes;
    out.total_allocated = e.total_allocated;
    out.total_reserved = e.total_reserved;
    out.addr = e.ptr;
    out.track = HostTrack(e.tid);
    out.device_type = static_cast<int8_t>(std::clamp<int>(e.device_type, -1, 127));
    out.device_id = e.device_type == 0 ? int16_t{-1} : e.device_index;
    m_.memory_events.push_back(out);
    RaisePeak(m_, out.device_id, e.total_allocated);
  }

  void AddGpu(const gpu::ActivityData& a) {
    const std::unordered_map<uint32_t, uint64_t> external = gpu::ExternalIds(a);
    auto tie = [&](size_t i, uint32_t correlation) {
      if (correlation == 0) return;
      m_.correlation.Set(i, correlation);
      if (auto it = external.find(correlation); it != external.end())
        m_.external_id.Set(i, static_cast<int64_t>(it->second));
    };
    m_.ReserveEvents(m_.size() + a.api.size() + a.device.size());
    std::unordered_set<uint32_t> launched;  // correlation ids of the runtime calls kept
    for (const gpu::ApiCall& c : a.api) {
      if (!Overlaps(c.begin_ns, std::max(c.end_ns, c.begin_ns + 1))) continue;
      const EventKind k = c.driver ? EventKind::kDriver : EventKind::kRuntime;
      tie(m_.Add(k, a.names[c.name], Unix(c.begin_ns), c.end_ns - c.begin_ns, HostTrack(c.tid)),
          c.correlation);
      if (c.correlation != 0) launched.insert(c.correlation);
    }
    for (const gpu::DeviceActivity& d : a.device) {
      // The GPU runs behind the host: device work goes with its launch, kept or not.
      const bool kept = d.correlation != 0
                            ? launched.contains(d.correlation)
                            : Overlaps(d.begin_ns, std::max(d.end_ns, d.begin_ns + 1));
      if (d.kind == gpu::ActivityKind::kSync || !kept) continue;
      const size_t i =
          m_.Add(KindOf(d.kind), a.names[d.name], Unix(d.begin_ns), d.end_ns - d.begin_ns,
                 m_.FindOrAddTrack({d.device, d.stream, d.device, d.stream}));
      tie(i, d.correlation);
      if (d.kind == gpu::ActivityKind::kKernel)
        AddKernelStats(a, d, i);
      else
        m_.memcpy_bytes.emplace_back(static_cast<uint32_t>(i), d.bytes);
    }
    for (const gpu::DeviceInfo& d : a.devices) AddDevice(d);
    m_.gpu_runtime = "CUDA";
  }

  static EventKind KindOf(gpu::ActivityKind k) {
    return k == gpu::ActivityKind::kMemcpy   ? EventKind::kMemcpy
           : k == gpu::ActivityKind::kMemset ? EventKind::kMemset
                                             : EventKind::kKernel;
  }

  // Blocks per SM as Kineto gives it (the grid's blocks over the device's SMs); the achieved
  // occupancy needs the kernel's limits Kineto reads from CUPTI, which the collector does not
  // keep: NaN, as in a trace without it.
  void AddKernelStats(const gpu::ActivityData& a, const gpu::DeviceActivity& d, size_t i) {
    auto dev = std::ranges::find(a.devices, d.device, &gpu::DeviceInfo::id);
    if (dev == a.devices.end() || dev->sms <= 0) return;
    const int64_t blocks = int64_t{d.grid[0]} * d.grid[1] * d.grid[2];
    KernelStats s;
    s.event = static_cast<uint32_t>(i);
    s.blocks_per_sm = static_cast<float>(static_cast<double>(blocks) / dev->sms);
    m_.kernel_stats.push_back(s);
  }

  void AddDevice(const gpu::DeviceInfo& d) {
    m_.devices.push_back({.id = d.id,
                          .name = d.name,
                          .total_memory_bytes = d.total_memory,
                          .compute_major = d.major,
                          .compute_minor = d.minor,
                          .num_sms = d.sms,
                          .max_threads_per_sm = d.max_threads_per_sm,
                          .vendor = "NVIDIA"});
  }

  const InProcessRecording& r_;
  TraceModel m_;
};

}  // namespace

TraceModel ReadInProcess(const InProcessRecording& r) { return InProcessBuilder(r).Build(); }

}  // namespace trainprof::trace
