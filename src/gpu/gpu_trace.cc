#include "gpu/gpu_trace.h"

#include <fmt/format.h>

#include <map>
#include <set>
#include <unordered_map>

#include "base/text.h"

namespace trainprof::gpu {
namespace {

using session::ExtraEvents;

const char* Category(ActivityKind kind) {
  switch (kind) {
    case ActivityKind::kKernel:
      return "kernel";
    case ActivityKind::kMemcpy:
      return "gpu_memcpy";
    case ActivityKind::kMemset:
      return "gpu_memset";
    case ActivityKind::kSync:
      return "cuda_sync";
  }
  return "kernel";
}

// The args Kineto writes for a kernel, a copy or a memset.
std::string DeviceArgs(const DeviceActivity& a, uint64_t external_id, int32_t sms) {
  std::string s = fmt::format(R"("External id":{},"device":{},"context":{},"stream":{},)"
                              R"("correlation":{})",
                              external_id, a.device, a.context, a.stream, a.correlation);
  if (a.kind == ActivityKind::kKernel) {
    const int64_t blocks = int64_t{a.grid[0]} * a.grid[1] * a.grid[2];
    const int64_t threads = int64_t{a.block[0]} * a.block[1] * a.block[2];
    const int64_t warps = blocks * ((threads + 31) / 32);
    s += fmt::format(R"(,"registers per thread":{},"shared memory":{},"grid":[{},{},{}],)"
                     R"("block":[{},{},{}])",
                     a.registers, a.shared_bytes, a.grid[0], a.grid[1], a.grid[2], a.block[0],
                     a.block[1], a.block[2]);
    if (sms > 0) {
      s += fmt::format(R"(,"blocks per SM":{},"warps per SM":{})",
                       static_cast<double>(blocks) / sms, static_cast<double>(warps) / sms);
    }
  } else if (a.kind != ActivityKind::kSync) {
    const int64_t dur = a.end_ns - a.begin_ns;
    s += fmt::format(R"(,"bytes":{})", a.bytes);
    if (dur > 0) {
      s += fmt::format(R"x(,"memory bandwidth (GB/s)":{})x", static_cast<double>(a.bytes) / dur);
    }
  }
  return s;
}

// One ExtraEvents group per (device, category); the first of a device names its process.
class Groups {
 public:
  explicit Groups(const ActivityData& a) : a_(a) {}
  ExtraEvents& For(int32_t device, const char* cat) {
    auto [it, added] = index_.emplace(std::make_pair(device, std::string(cat)), groups_.size());
    if (added) {
      ExtraEvents x;
      x.pid = device;
      if (named_.insert(device).second) x.process_name = fmt::format("GPU {}", device);
      x.cat = cat;
      x.names = a_.names;
      groups_.push_back(std::move(x));
    }
    return groups_[it->second];
  }
  std::vector<ExtraEvents> Take() { return std::move(groups_); }

 private:
  const ActivityData& a_;
  std::map<std::pair<int32_t, std::string>, size_t> index_;
  std::set<int32_t> named_;
  std::vector<ExtraEvents> groups_;
};

int32_t SmsOf(const ActivityData& a, int32_t device) {
  for (const DeviceInfo& d : a.devices) {
    if (d.id == device) return d.sms;
  }
  return 0;
}

}  // namespace

void AddGpuTrace(const ActivityData& a, session::TraceInput& trace) {
  const std::unordered_map<uint32_t, uint64_t> external = ExternalIds(a);
  auto external_of = [&](uint32_t c) {
    auto it = external.find(c);
    return it == external.end() ? uint64_t{0} : it->second;
  };
  Groups groups(a);
  std::set<std::pair<int32_t, int64_t>> streams;
  std::set<uint32_t> launched;  // correlations that reached a device
  for (const DeviceActivity& d : a.device) {
    ExtraEvents& g = groups.For(d.device, Category(d.kind));
    g.args.push_back(DeviceArgs(d, external_of(d.correlation), SmsOf(a, d.device)));
    g.events.push_back({d.name, static_cast<uint32_t>(g.args.size() - 1), d.stream, d.begin_ns,
                        d.end_ns - d.begin_ns, -1});
    if (streams.insert({d.device, d.stream}).second) {
      g.thread_names.emplace_back(d.stream, fmt::format("stream {}", d.stream));
    }
    if (d.correlation != 0 && d.kind != ActivityKind::kSync) {
      trace.flows.push_back({d.correlation, d.begin_ns, d.device, d.stream, false});
      launched.insert(d.correlation);
    }
  }
  ExtraEvents runtime{.cat = "cuda_runtime", .names = a.names};
  ExtraEvents driver{.cat = "cuda_driver", .names = a.names};
  for (const ApiCall& c : a.api) {
    ExtraEvents& g = c.driver ? driver : runtime;
    g.args.push_back(fmt::format(R"("External id":{},"correlation":{})", external_of(c.correlation),
                                 c.correlation));
    g.events.push_back({c.name, static_cast<uint32_t>(g.args.size() - 1), c.tid, c.begin_ns,
                        c.end_ns - c.begin_ns, -1});
    if (launched.count(c.correlation) != 0) {
      trace.flows.push_back({c.correlation, c.begin_ns, ExtraEvents::kSessionPid, c.tid, true});
    }
  }
  for (ExtraEvents& g : groups.Take()) trace.extra.push_back(std::move(g));
  if (!runtime.events.empty()) trace.extra.push_back(std::move(runtime));
  if (!driver.events.empty()) trace.extra.push_back(std::move(driver));
  trace.device_properties = DevicePropertiesJson(a.devices);
}

std::string DevicePropertiesJson(const std::vector<DeviceInfo>& devices) {
  if (devices.empty()) return "";
  std::string s = "[";
  for (const DeviceInfo& d : devices) {
    if (s.size() > 1) s += ',';
    s += fmt::format(R"({{"id":{},"name":")", d.id);
    base::AppendJsonEscaped(s, d.name);
    s += fmt::format(
        R"(","totalGlobalMem":{},"computeMajor":{},"computeMinor":{},"maxThreadsPerBlock":{},)"
        R"("maxThreadsPerMultiprocessor":{},"regsPerBlock":{},"regsPerMultiprocessor":{},)"
        R"("warpSize":{},"sharedMemPerBlock":{},"sharedMemPerMultiprocessor":{},)"
        R"("numSms":{},"maxBlocksPerMultiprocessor":{}}})",
        d.total_memory, d.major, d.minor, d.max_threads_per_block, d.max_threads_per_sm,
        d.max_registers_per_block, d.max_registers_per_sm, d.warp_size, d.max_shared_per_block,
        d.max_shared_per_sm, d.sms, d.max_blocks_per_sm);
  }
  return s + "]";
}

}  // namespace trainprof::gpu
