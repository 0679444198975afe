// AMD GPUs as a sampler source, through ROCm SMI (system/rocm_smi.h): utilization, memory
// bandwidth use, memory, power (of the cap), edge temperature and energy per GPU, in the same
// columns as NVML's (GpuColumns), and each process's VRAM and compute-unit occupancy. Clocks
// and PCIe throughput are not read (their ROCm SMI structs differ between releases).
#include <fmt/format.h>

#include <set>

#include "system/rocm_smi.h"
#include "system/sources.h"

namespace trainprof::system {
namespace {

class RocmSmiSource : public Source {
 public:
  RocmSmiSource(const std::string& library, DiagnosticSink* diagnostics, int first_gpu)
      : diag_(diagnostics) {
    if (library.empty()) {
      why_not_ =
          "AMD GPU: ROCm SMI is switched off (no library given); AMD GPU figures are not "
          "sampled";
      return;
    }
    auto smi = RocmSmi::Load(library);
    if (!smi.ok()) {
      why_not_ = smi.status().code() == StatusCode::kNotFound
                     ? fmt::format("AMD GPU figures unavailable: librocm_smi64 not found ({})",
                                   smi.status().message())
                     : fmt::format("AMD GPU figures unavailable: {}", smi.status().message());
      return;
    }
    smi_ = std::move(*smi);
    Discover(first_gpu);
  }
  std::string why_not() const override { return why_not_; }
  void AddColumns(std::vector<SeriesColumn>& cols) override {
    for (const GpuInfo& g : infos_)
      for (SeriesColumn& c : GpuColumns(g.index)) cols.push_back(std::move(c));
  }
  void Read(const SampleRow& row) override {
    for (size_t i = 0; i < infos_.size(); ++i)
      ReadDevice(static_cast<uint32_t>(i), row.values + row.first + i * kGpuFigures, row.dt_s);
  }
  std::vector<GpuInfo> gpus() const override { return infos_; }
  std::vector<EnergyDevice> Energy() const override;
  std::map<int64_t, ProcessGpuUse> ReadProcesses(const std::vector<int64_t>& pids) override;

 private:
  struct Device {
    std::set<std::string> unsupported;
    uint64_t last_count = 0;
    GpuEnergy energy;
  };
  void Discover(int first_gpu);
  bool Check(uint32_t i, RsmiStatus rc, const char* figure);
  void ReadDevice(uint32_t i, double* v, double dt_s);
  void ReadEnergy(uint32_t i, double power, double dt_s, double* v);

  std::unique_ptr<RocmSmi> smi_;
  std::vector<GpuInfo> infos_;
  std::vector<Device> devices_;
  std::string why_not_;
  DiagnosticSink* diag_;
};

void RocmSmiSource::Discover(int first_gpu) {
  uint32_t count = 0;
  if (RsmiStatus rc = smi_->f.num_devices(&count); rc != kRsmiSuccess || count == 0) {
    why_not_ = rc != kRsmiSuccess ? fmt::format(
                                        "AMD GPU figures unavailable: ROCm SMI cannot "
                                        "count the GPUs: {}",
                                        smi_->ErrorString(rc))
                                  : "AMD GPU figures unavailable: ROCm SMI sees no GPU";
    return;
  }
  for (uint32_t i = 0; i < count; ++i) {
    GpuInfo g;
    g.index = first_gpu + static_cast<int>(i);
    char name[256] = {};
    g.name = smi_->f.name(i, name, sizeof(name)) == kRsmiSuccess && name[0] != 0
                 ? std::string(name)
                 : "unknown AMD GPU";
    uint64_t total = 0, cap = 0;
    if (smi_->f.memory_total(i, kRsmiMemVram, &total) == kRsmiSuccess)
      g.memory_total_bytes = static_cast<double>(total);
    g.power_limit_w = smi_->f.power_cap(i, 0, &cap) == kRsmiSuccess ? cap / 1e6 : kNaN;
    infos_.push_back(std::move(g));
    devices_.emplace_back();
  }
}

bool RocmSmiSource::Check(uint32_t i, RsmiStatus rc, const char* figure) {
  if (rc == kRsmiSuccess) return true;
  const int gpu = infos_[i].index;
  if (rc == kRsmiNotSupported) {
    devices_[i].unsupported.insert(figure);
    diag_->Add(base::DiagnosticId::kGpuFigureNotSupported, fmt::format("GPU {} {}", gpu, figure),
               fmt::format("GPU {} does not report its {} (ROCm SMI: not supported)", gpu, figure));
    return false;
  }
  diag_->Add(base::DiagnosticId::kRocmSmiError, fmt::format("GPU {} {}", gpu, figure),
             fmt::format("GPU {}: ROCm SMI failed to read the {}: {}; those samples are missing",
                         gpu, figure, smi_->ErrorString(rc)));
  return false;
}

void RocmSmiSource::ReadDevice(uint32_t i, double* v, double dt_s) {
  Device& d = devices_[i];
  auto get = [&](const char* figure, auto&& call) {
    return d.unsupported.count(figure) == 0 && Check(i, call(), figure);
  };
  uint32_t pct = 0;
  if (get("utilization", [&] { return smi_->f.busy_percent(i, &pct); })) v[kGpuUtil] = pct;
  if (get("memory bandwidth use", [&] { return smi_->f.memory_busy_percent(i, &pct); }))
    v[kGpuMemUtil] = pct;
  uint64_t used = 0, uw = 0;
  if (get("memory", [&] { return smi_->f.memory_usage(i, kRsmiMemVram, &used); })) {
    v[kGpuMemUsed] = static_cast<double>(used);
    if (infos_[i].memory_total_bytes > 0)
      v[kGpuMemUsedPct] = 100.0 * static_cast<double>(used) / infos_[i].memory_total_bytes;
  }
  double power = kNaN;
  if (get("power", [&] { return smi_->f.power_ave(i, 0, &uw); })) {
    power = static_cast<double>(uw) / 1e6;
    v[kGpuPower] = power;
    if (infos_[i].power_limit_w > 0) v[kGpuPowerPct] = 100.0 * power / infos_[i].power_limit_w;
  }
  int64_t mc = 0;
  if (get("temperature",
          [&] { return smi_->f.temperature(i, kRsmiTempEdge, kRsmiTempCurrent, &mc); }))
    v[kGpuTemp] = static_cast<double>(mc) / 1000.0;
  ReadEnergy(i, power, dt_s, v);
}

// Energy: the counter (count x resolution µJ) where the GPU has one, else power x time.
void RocmSmiSource::ReadEnergy(uint32_t i, double power, double dt_s, double* v) {
  Device& d = devices_[i];
  GpuEnergy& e = d.energy;
  e.AddPower(power, dt_s);
  uint64_t count = 0, ts = 0;
  float resolution_uj = 0;
  if (e.counter_works) {
    const RsmiStatus rc = smi_->f.energy_count(i, &count, &resolution_uj, &ts);
    if (rc == kRsmiNotSupported) {
      e.counter_works = false;
    } else if (Check(i, rc, "energy counter")) {
      if (e.have_counter && count >= d.last_count)
        e.counter_j += static_cast<double>(count - d.last_count) * resolution_uj * 1e-6;
      e.have_counter = true;
      d.last_count = count;
    }
  }
  v[kGpuEnergy] = e.joules();
}

std::vector<EnergyDevice> RocmSmiSource::Energy() const {
  std::vector<const GpuEnergy*> energy;
  for (const Device& d : devices_) energy.push_back(&d.energy);
  return GpuEnergyRows(infos_, energy, "ROCm SMI");
}

std::map<int64_t, ProcessGpuUse> RocmSmiSource::ReadProcesses(const std::vector<int64_t>& pids) {
  std::map<int64_t, ProcessGpuUse> out;
  if (infos_.empty()) return out;
  const std::set<int64_t> wanted(pids.begin(), pids.end());
  std::vector<RsmiProcessInfo> procs(256);
  uint32_t n = static_cast<uint32_t>(procs.size());
  const RsmiStatus rc = smi_->f.process_info(procs.data(), &n);
  if (rc != kRsmiSuccess && rc != kRsmiInsufficientSize) return out;
  for (uint32_t k = 0; k < std::min<uint32_t>(n, 256); ++k) {
    const RsmiProcessInfo& p = procs[k];
    if (!wanted.contains(p.process_id)) continue;
    ProcessGpuUse& use = out[p.process_id];
    use.memory_bytes += static_cast<double>(p.vram_usage);
    use.util_percent = (std::isnan(use.util_percent) ? 0 : use.util_percent) + p.cu_occupancy;
  }
  return out;
}

}  // namespace

std::unique_ptr<Source> MakeRocmSmiSource(const SourceContext& c) {
  return std::make_unique<RocmSmiSource>(c.options.rocm_smi_library, c.diagnostics, c.first_gpu);
}

}  // namespace trainprof::system
