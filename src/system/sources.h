// Internal pieces of the system sampler: the diagnostic sink, file reading below a root, the
// CPU energy source (RAPL) and the GPU source (NVML). Only sampler.cc and tests use them.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "report/report.h"
#include "system/nvml.h"
#include "system/sampler.h"

namespace trainprof::system {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Counts problems by (name, source); keeps the first message of each.
class DiagnosticSink {
 public:
  void Add(report::Severity severity, const std::string& name, const std::string& source,
           const std::string& message);
  std::vector<report::Diagnostic> Take() const;

 private:
  struct Entry {
    report::Diagnostic d;
    size_t order = 0;
  };
  std::map<std::pair<std::string, std::string>, Entry> entries_;
};

// Reads a whole (small) file into `out`, reusing its capacity. Returns 0 or the errno.
int ReadSmallFile(const std::string& path, std::string* out);

// Counter difference; a counter that went backwards yields NaN and a diagnostic. `what` names
// the counter: a string, or a callable returning one (only called when it went backwards).
void ReportBackwards(const std::string& what, uint64_t before, uint64_t now, DiagnosticSink& d);
template <typename What>
double CounterDelta(uint64_t now, uint64_t before, const What& what, DiagnosticSink& d) {
  if (now >= before) return static_cast<double>(now - before);
  if constexpr (std::is_invocable_v<What>) {
    ReportBackwards(what(), before, now, d);
  } else {
    ReportBackwards(what, before, now, d);
  }
  return kNaN;
}

// CPU energy from RAPL (/sys/class/powercap/intel-rapl:N, also used for AMD CPUs by recent
// kernels) or AMD's amd_energy hwmon driver (/sys/class/hwmon/hwmonN/energyN_input, socket
// counters). Package-level zones only, so sub-zones (core, uncore, dram) are not counted twice.
class CpuEnergySource {
 public:
  CpuEnergySource(const std::string& root, DiagnosticSink* diagnostics);
  bool available() const { return !zones_.empty(); }
  // One line for the report when not available (absent or unreadable), else "".
  const std::string& why_not() const { return why_not_; }
  std::string device_name() const;
  // Reads every zone; returns the joules used since the previous Read() (NaN on the first
  // call or when every zone failed). Wrap-around is undone with max_energy_range_uj.
  double Read();
  double total_joules() const { return total_j_; }

 private:
  struct Zone {
    std::string name;         // "package-0"
    std::string energy_path;  // µJ counter
    uint64_t range_uj = 0;    // wraps at this value (0: does not wrap)
    uint64_t last_uj = 0;
    bool have_last = false;
  };
  std::vector<Zone> zones_;
  std::string why_not_;
  DiagnosticSink* diag_;
  std::string buf_;
  double total_j_ = 0;
};

// Per-GPU figures through NVML.
class GpuSource {
 public:
  // Fills `gpus` and appends this source's columns; notes say why there are none.
  GpuSource(const std::string& library, DiagnosticSink* diagnostics);
  ~GpuSource();
  bool available() const { return !devices_.empty(); }
  const std::string& why_not() const { return why_not_; }
  const std::vector<GpuInfo>& gpus() const { return infos_; }
  // Number of figures per GPU and their column definitions for GPU `index`.
  static std::vector<SeriesColumn> Columns(int index);
  // Writes Columns(i).size() values per GPU into `out`, in GPU order. `dt_s` is the time since
  // the previous sample (for power integration), NaN on the first.
  void Read(double* out, double dt_s);
  std::vector<EnergyDevice> Energy() const;
  // PCIe readings block for 20 ms each: read them every Nth sample so they stay under a quarter
  // of the interval.
  void SetInterval(double interval_s);

 private:
  struct Device {
    NvmlDevice handle = nullptr;
    bool lost = false;
    bool has_energy_counter = true;
    unsigned long long energy_start_mj = 0;  // NOLINT(runtime/int)
    unsigned long long energy_last_mj = 0;   // NOLINT(runtime/int)
    bool have_energy = false;
    double counter_j = 0;     // from the energy counter
    double integrated_j = 0;  // power × time
    double last_power_w = kNaN;
    std::map<std::string, bool> unsupported;  // figure -> NVML said "not supported"
  };
  bool Check(size_t i, NvmlReturn rc, const char* figure);

  std::unique_ptr<Nvml> nvml_;
  std::vector<Device> devices_;
  std::vector<GpuInfo> infos_;
  std::string why_not_;
  DiagnosticSink* diag_;
  int pcie_every_ = 1;
  int64_t reads_ = 0;
};

}  // namespace trainprof::system
