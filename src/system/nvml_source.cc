#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "system/sources.h"

namespace trainprof::system {

using report::Unit;

std::vector<SeriesColumn> GpuColumns(int i) {
  auto col = [&](const char* key, const char* title, Unit unit, bool trace, const char* mlflow) {
    return SeriesColumn{fmt::format("gpu{}_{}", i, key),
                        fmt::format("GPU {} {}", i, title),
                        unit,
                        false,
                        trace,
                        *mlflow ? fmt::format("system/gpu_{}_{}", i, mlflow) : std::string()};
  };
  return {
      col("utilization_percent", "utilization", Unit::kPercent, true, "utilization_percentage"),
      col("memory_bandwidth_percent", "memory bandwidth utilization", Unit::kPercent, false, ""),
      col("memory_used_bytes", "memory used", Unit::kBytes, true, "memory_usage_megabytes"),
      col("memory_used_percent", "memory used", Unit::kPercent, false, "memory_usage_percentage"),
      col("power_w", "power", Unit::kWatts, true, "power_usage_watts"),
      col("power_percent", "power (of the limit)", Unit::kPercent, false, "power_usage_percentage"),
      col("temperature_c", "temperature", Unit::kCelsius, false, ""),
      col("sm_clock_mhz", "SM clock", Unit::kMegahertz, false, ""),
      col("memory_clock_mhz", "memory clock", Unit::kMegahertz, false, ""),
      col("pcie_tx_bytes_per_s", "PCIe transmit", Unit::kBytesPerSecond, false, ""),
      col("pcie_rx_bytes_per_s", "PCIe receive", Unit::kBytesPerSecond, false, ""),
      col("energy_j", "energy since start", Unit::kJoules, false, "")};
}

NvmlSource::NvmlSource(const std::string& library, DiagnosticSink* diagnostics, int first_gpu,
                       double interval_s)
    : diag_(diagnostics) {
  if (library.empty()) {
    why_not_ = "GPU: NVML is switched off (no library given); GPU figures are not sampled";
    return;
  }
  StatusOr<std::unique_ptr<Nvml>> nvml = Nvml::Load(library);
  if (!nvml.ok()) {
    why_not_ = fmt::format("GPU: {}; GPU figures are not sampled (no NVIDIA driver here)",
                           nvml.status().message());
    return;
  }
  nvml_ = std::move(*nvml);
  unsigned int count = 0;
  if (NvmlReturn rc = nvml_->DeviceCount(&count); rc != kNvmlSuccess) {
    why_not_ = fmt::format("GPU: NVML cannot count the GPUs: {}; GPU figures are not sampled",
                           nvml_->ErrorString(rc));
    return;
  }
  if (count == 0) {
    why_not_ = "GPU: NVML sees no GPU; GPU figures are not sampled";
    return;
  }
  for (unsigned int i = 0; i < count; ++i) {
    Device d;
    GpuInfo info;
    info.index = first_gpu + static_cast<int>(i);
    info.power_limit_w = kNaN;
    if (NvmlReturn rc = nvml_->DeviceHandle(i, &d.handle); rc != kNvmlSuccess) {
      diag_->Add(base::DiagnosticId::kNvmlError, fmt::format("GPU {}", i),
                 fmt::format("GPU {}: NVML gives no handle ({}); it is not sampled", i,
                             nvml_->ErrorString(rc)));
      d.lost = true;
    } else {
      if (nvml_->Name(d.handle, &info.name) != kNvmlSuccess) info.name = "unknown GPU";
      NvmlMemory m{};
      if (nvml_->Memory(d.handle, &m) == kNvmlSuccess) {
        info.memory_total_bytes = static_cast<double>(m.total);
      }
      unsigned int limit = 0;
      if (nvml_->PowerLimitMilliwatts(d.handle, &limit) == kNvmlSuccess) {
        info.power_limit_w = limit / 1000.0;
      }
    }
    devices_.push_back(std::move(d));
    infos_.push_back(std::move(info));
  }
  // Each PCIe reading blocks for 20 ms; keep them under a quarter of the interval.
  const double cost_s = 0.040 * static_cast<double>(devices_.size());
  pcie_every_ = std::max(1, static_cast<int>(std::ceil(cost_s / (0.25 * interval_s))));
}

NvmlSource::~NvmlSource() = default;

void NvmlSource::AddColumns(std::vector<SeriesColumn>& cols) {
  for (const GpuInfo& g : infos_)
    for (SeriesColumn& c : GpuColumns(g.index)) cols.push_back(std::move(c));
}

bool NvmlSource::Check(size_t i, NvmlReturn rc, const char* figure) {
  if (rc == kNvmlSuccess) return true;
  Device& d = devices_[i];
  if (rc == kNvmlErrorNotSupported) {
    d.unsupported.insert(figure);
    diag_->Add(base::DiagnosticId::kGpuFigureNotSupported, fmt::format("GPU {} {}", i, figure),
               fmt::format("GPU {} does not report its {} (NVML: not supported)", i, figure));
    return false;
  }
  if (rc == kNvmlErrorGpuIsLost) {
    d.lost = true;
    diag_->Add(base::DiagnosticId::kGpuLost, fmt::format("GPU {}", i),
               fmt::format("GPU {} fell off the bus during the run (NVML: {}); it is not "
                           "sampled from then on",
                           i, nvml_->ErrorString(rc)));
    return false;
  }
  diag_->Add(base::DiagnosticId::kNvmlError, fmt::format("GPU {} {}", i, figure),
             fmt::format("GPU {}: NVML failed to read the {}: {}; those samples are missing", i,
                         figure, nvml_->ErrorString(rc)));
  return false;
}

void NvmlSource::Read(const SampleRow& row) {
  const bool pcie_now = reads_ % pcie_every_ == 0;
  ++reads_;
  for (size_t i = 0; i < devices_.size(); ++i) {
    double* v = row.values + row.first + i * kGpuFigures;
    Device& d = devices_[i];
    auto get = [&](const char* figure, auto&& call) {
      if (d.lost || d.unsupported.count(figure) > 0) return false;
      return Check(i, call(), figure);
    };
    NvmlUtilization u{};
    if (get("utilization", [&] { return nvml_->Utilization(d.handle, &u); })) {
      v[kGpuUtil] = u.gpu;
      v[kGpuMemUtil] = u.memory;
    }
    NvmlMemory m{};
    if (get("memory", [&] { return nvml_->Memory(d.handle, &m); })) {
      v[kGpuMemUsed] = static_cast<double>(m.used);
      if (m.total > 0) v[kGpuMemUsedPct] = 100.0 * static_cast<double>(m.used) / m.total;
    }
    unsigned int x = 0;
    double power = kNaN;
    if (get("power", [&] { return nvml_->PowerMilliwatts(d.handle, &x); })) {
      power = x / 1000.0;
      v[kGpuPower] = power;
      if (infos_[i].power_limit_w > 0) v[kGpuPowerPct] = 100.0 * power / infos_[i].power_limit_w;
    }
    if (get("temperature", [&] { return nvml_->TemperatureC(d.handle, &x); })) v[kGpuTemp] = x;
    if (get("SM clock", [&] { return nvml_->ClockMhz(d.handle, kNvmlClockSm, &x); })) {
      v[kGpuSmClock] = x;
    }
    if (get("memory clock", [&] { return nvml_->ClockMhz(d.handle, kNvmlClockMem, &x); })) {
      v[kGpuMemClock] = x;
    }
    if (pcie_now) {
      if (get("PCIe throughput",
              [&] { return nvml_->PcieKilobytesPerSecond(d.handle, kNvmlPcieTxBytes, &x); })) {
        v[kGpuPcieTx] = x * 1000.0;
      }
      if (get("PCIe throughput",
              [&] { return nvml_->PcieKilobytesPerSecond(d.handle, kNvmlPcieRxBytes, &x); })) {
        v[kGpuPcieRx] = x * 1000.0;
      }
    }
    ReadEnergy(i, power, row.dt_s, v);
  }
}

// Energy: the counter where the GPU has one, else power integrated (trapezoids).
void NvmlSource::ReadEnergy(size_t i, double power, double dt_s, double* v) {
  Device& d = devices_[i];
  GpuEnergy& e = d.energy;
  e.AddPower(power, dt_s);
  unsigned long long mj = 0;  // NOLINT(runtime/int)
  if (e.counter_works && !d.lost) {
    const NvmlReturn rc = nvml_->EnergyMillijoules(d.handle, &mj);
    if (rc == kNvmlErrorNotSupported) {
      e.counter_works = false;
    } else if (Check(i, rc, "energy counter")) {
      if (!e.have_counter) {
        e.have_counter = true;
      } else if (mj >= d.energy_last_mj) {
        e.counter_j += static_cast<double>(mj - d.energy_last_mj) / 1000.0;
      } else {
        diag_->Add(base::DiagnosticId::kSystemCounterBackwards,
                   fmt::format("GPU {} energy counter", i),
                   fmt::format("GPU {} energy counter went backwards ({} -> {} mJ; driver "
                               "reloaded?); that interval's energy is left out",
                               i, d.energy_last_mj, mj));
      }
      d.energy_last_mj = mj;
    }
  }
  if (!d.lost) v[kGpuEnergy] = e.joules();
}

void GpuEnergy::AddPower(double power_w, double dt_s) {
  if (!std::isnan(power_w) && !std::isnan(last_power_w) && !std::isnan(dt_s))
    integrated_j += 0.5 * (power_w + last_power_w) * dt_s;
  last_power_w = power_w;
}

std::vector<EnergyDevice> GpuEnergyRows(const std::vector<GpuInfo>& gpus,
                                        const std::vector<const GpuEnergy*>& energy,
                                        const char* library) {
  std::vector<EnergyDevice> out;
  for (size_t i = 0; i < gpus.size() && i < energy.size(); ++i) {
    const GpuEnergy& e = *energy[i];
    out.push_back({fmt::format("GPU {}: {}", gpus[i].index, gpus[i].name),
                   fmt::format("{} {}", library,
                               e.from_counter() ? "energy counter" : "power integrated over time"),
                   e.joules()});
  }
  return out;
}

std::vector<EnergyDevice> NvmlSource::Energy() const {
  std::vector<const GpuEnergy*> energy;
  for (const Device& d : devices_) energy.push_back(&d.energy);
  return GpuEnergyRows(infos_, energy, "NVML");
}

std::map<int64_t, ProcessGpuUse> NvmlSource::ReadProcesses(const std::vector<int64_t>& pids) {
  std::map<int64_t, ProcessGpuUse> out;
  const std::set<int64_t> wanted(pids.begin(), pids.end());
  constexpr unsigned int kCapacity = 256;
  std::vector<NvmlProcessInfo> infos(kCapacity);
  std::vector<NvmlProcessUtilization> samples(kCapacity);
  unsigned long long newest = util_since_us_;  // NOLINT(runtime/int)
  for (size_t i = 0; i < devices_.size(); ++i) {
    if (devices_[i].lost) continue;
    unsigned int n = kCapacity;
    NvmlReturn rc = nvml_->ComputeProcesses(devices_[i].handle, &n, infos.data());
    if (rc == kNvmlSuccess || (rc == kNvmlErrorInsufficientSize && n > 0)) {
      for (unsigned int k = 0; k < std::min(n, kCapacity); ++k) {
        const NvmlProcessInfo& p = infos[k];
        if (!wanted.contains(p.pid) || p.used_gpu_memory == ~0ULL) continue;
        out[p.pid].memory_bytes += static_cast<double>(p.used_gpu_memory);
      }
    } else if (rc != kNvmlErrorNotSupported) {
      Check(i, rc, "compute processes");
    }
    n = kCapacity;
    rc = nvml_->ProcessUtilization(devices_[i].handle, samples.data(), &n, util_since_us_);
    if (rc != kNvmlSuccess) continue;  // no sample since the last call, or not supported
    for (unsigned int k = 0; k < std::min(n, kCapacity); ++k) {
      const NvmlProcessUtilization& u = samples[k];
      newest = std::max(newest, u.timestamp);
      if (!wanted.contains(u.pid)) continue;
      ProcessGpuUse& use = out[u.pid];
      use.util_percent = (std::isnan(use.util_percent) ? 0 : use.util_percent) + u.sm_util;
    }
  }
  util_since_us_ = newest;
  return out;
}

std::unique_ptr<Source> MakeNvmlSource(const SourceContext& c) {
  return std::make_unique<NvmlSource>(c.options.nvml_library, c.diagnostics, c.first_gpu,
                                      c.options.interval_s);
}

}  // namespace trainprof::system
