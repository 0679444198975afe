#include "trace/devices.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <set>
#include <utility>
#include <vector>

#include "base/diagnostics.h"
#include "base/text.h"

namespace trainprof::trace {

namespace {

// AMD Instinct models by the architecture they are built on (AMD's documentation).
constexpr std::array<std::pair<std::string_view, std::string_view>, 11> kAmdArch = {{
    {"mi355", "gfx950"},
    {"mi350", "gfx950"},
    {"mi325", "gfx942"},
    {"mi308", "gfx942"},
    {"mi300", "gfx942"},
    {"mi250", "gfx90a"},
    {"mi210", "gfx90a"},
    {"mi100", "gfx908"},
    {"mi60", "gfx906"},
    {"mi50", "gfx906"},
    {"mi25", "gfx900"},
}};

std::string VendorOf(const DeviceInfo& d, std::string_view runtime) {
  static constexpr std::array<std::string_view, 3> kAmd = {"amd", "instinct", "radeon"};
  static constexpr std::array<std::string_view, 5> kNvidia = {"nvidia", "tesla", "geforce",
                                                              "quadro", "rtx"};
  if (runtime == "ROCm" || base::ContainsAnyNoCase(d.name, kAmd)) return "AMD";
  if (runtime == "CUDA" || base::ContainsAnyNoCase(d.name, kNvidia)) return "NVIDIA";
  return "";
}

std::set<int64_t> KernelDeviceIds(const TraceModel& m) {
  std::set<int64_t> ids;
  for (const Track& t : m.tracks)
    if (t.device >= 0) ids.insert(t.device);
  return ids;
}

std::set<int64_t> MemoryDeviceIds(const TraceModel& m) {
  std::set<int64_t> ids;
  for (const MemoryEvent& e : m.memory_events)
    if (e.device_type != 0 && e.device_id >= 0) ids.insert(e.device_id);
  return ids;
}

// The id the kernels' single device id stands for, from the memory events, else from a lone
// deviceProperties entry; -1 when the trace does not show it.
int64_t MappedId(const TraceModel& m, const std::set<int64_t>& memory) {
  if (memory.size() == 1) return *memory.begin();
  if (memory.empty() && m.devices.size() == 1) return m.devices.front().id;
  return -1;
}

// `by_memory`: the memory events named `to`, else the lone deviceProperties entry.
void MapKernelDevice(TraceModel& m, int64_t from, int64_t to, bool by_memory,
                     std::string_view file) {
  for (Track& t : m.tracks)
    if (t.device == from) t.device = to;
  m.AddDiagnostic(
      base::DiagnosticId::kDeviceIdsMapped, 1,
      fmt::format("{}: kernels name device {}, the {} device {}: taken as GPU {} ({} numbers a "
                  "kernel's device by HSA agent, CPUs first)",
                  file, from, by_memory ? "memory events" : "deviceProperties", to, to,
                  m.gpu_runtime.empty() ? "ROCm" : m.gpu_runtime));
}

void MapIds(TraceModel& m, std::string_view file) {
  const std::set<int64_t> kernels = KernelDeviceIds(m), memory = MemoryDeviceIds(m);
  if (kernels.empty() || m.devices.empty()) return;
  std::set<int64_t> unknown;
  for (int64_t id : kernels)
    if (!m.FindDevice(id)) unknown.insert(id);
  const int64_t to = kernels.size() == 1 ? MappedId(m, memory) : -1;
  if (to >= 0 && to != *kernels.begin() && m.FindDevice(to))
    return MapKernelDevice(m, *kernels.begin(), to, !memory.empty(), file);
  if (!unknown.empty()) {
    m.AddDiagnostic(base::DiagnosticId::kDeviceIdsUnmapped, 1,
                    fmt::format("{}: kernels name device {} that deviceProperties lacks; shown "
                                "without name or memory",
                                file, fmt::join(unknown, ", ")));
  } else if (m.gpu_runtime == "ROCm" && m.devices.size() > 1 && memory.empty()) {
    m.AddDiagnostic(base::DiagnosticId::kDeviceIdsUnchecked, 1,
                    fmt::format("{}: kernels name device {}; ROCm may number them by HSA agent, "
                                "CPUs first, and no memory events show which GPU that is",
                                file, fmt::join(kernels, ", ")));
  }
}

}  // namespace

std::string ArchOf(const DeviceInfo& d) {
  if (d.vendor == "AMD") {
    const std::string low = base::AsciiLower(d.name);
    for (const auto& [model, arch] : kAmdArch)
      if (low.find(model) != std::string::npos) return std::string(arch);
    return d.compute_major > 0 ? fmt::format("gfx{}{}x", d.compute_major, d.compute_minor) : "";
  }
  return d.compute_major > 0 ? fmt::format("sm_{}{}", d.compute_major, d.compute_minor) : "";
}

std::string InferAmdName(const DeviceInfo& d) {
  // gfx94x with 304 compute units: an MI300X (192 GiB) or MI325X (256 GiB); 228: an MI300A.
  if (d.compute_major != 9 || d.compute_minor != 4) return "";
  if (d.num_sms == 228) return "AMD Instinct MI300A";
  if (d.num_sms != 304 || d.total_memory_bytes <= 0) return "";
  return d.total_memory_bytes <= (int64_t{200} << 30) ? "AMD Instinct MI300X"
                                                      : "AMD Instinct MI325X";
}

void ResolveDevices(TraceModel& m, std::string_view file) {
  std::vector<int64_t> inferred;
  for (DeviceInfo& d : m.devices) {
    d.vendor = VendorOf(d, m.gpu_runtime);
    if (d.name.empty() && d.vendor == "AMD" && !(d.name = InferAmdName(d)).empty())
      inferred.push_back(d.id);
    d.arch = ArchOf(d);
  }
  if (!inferred.empty()) {
    const DeviceInfo& d = *m.FindDevice(inferred.front());
    m.AddDiagnostic(base::DiagnosticId::kDeviceNameInferred, static_cast<int64_t>(inferred.size()),
                    fmt::format("{}: device {} has no name; taken as {} by its architecture ({}), "
                                "{} compute units and memory",
                                file, fmt::join(inferred, ", "), d.name, d.arch, d.num_sms));
  }
  MapIds(m, file);
}

}  // namespace trainprof::trace
