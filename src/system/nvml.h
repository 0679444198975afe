// NVML, the NVIDIA driver's management library, loaded at run time with dlopen so trainprof runs
// on machines without a GPU or driver. Only the few functions the sampler needs are declared
// here, with the types and constants of NVML's public API.
//
//   StatusOr<std::unique_ptr<system::Nvml>> nvml = system::Nvml::Load("libnvidia-ml.so.1");
//   if (!nvml.ok()) { report "no NVML: ..."; }
//   unsigned count = 0;
//   if ((*nvml)->DeviceCount(&count) == system::kNvmlSuccess) ...
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "trainprof/status.h"

namespace trainprof::system {

using NvmlReturn = int;  // nvmlReturn_t
inline constexpr NvmlReturn kNvmlSuccess = 0;
inline constexpr NvmlReturn kNvmlErrorNotSupported = 3;
inline constexpr NvmlReturn kNvmlErrorGpuIsLost = 15;
using NvmlDevice = struct NvmlDeviceOpaque*;  // nvmlDevice_t

struct NvmlMemory {                      // nvmlMemory_t
  unsigned long long total, free, used;  // NOLINT(runtime/int): NVML's ABI
};
struct NvmlUtilization {  // nvmlUtilization_t
  unsigned int gpu, memory;
};

struct NvmlProcessInfo {  // nvmlProcessInfo_t (v2 and v3 share this layout)
  unsigned int pid;
  unsigned long long used_gpu_memory;  // NOLINT(runtime/int); NVML_VALUE_NOT_AVAILABLE = ~0
  unsigned int gpu_instance_id, compute_instance_id;
};
struct NvmlProcessUtilization {  // nvmlProcessUtilizationSample_t
  unsigned int pid;
  unsigned long long timestamp;  // NOLINT(runtime/int): µs
  unsigned int sm_util, mem_util, enc_util, dec_util;
};
inline constexpr NvmlReturn kNvmlErrorNotFound = 6;
inline constexpr NvmlReturn kNvmlErrorInsufficientSize = 7;

inline constexpr int kNvmlTemperatureGpu = 0;  // NVML_TEMPERATURE_GPU
inline constexpr int kNvmlClockSm = 1;         // NVML_CLOCK_SM
inline constexpr int kNvmlClockMem = 2;        // NVML_CLOCK_MEM
inline constexpr int kNvmlPcieTxBytes = 0;     // NVML_PCIE_UTIL_TX_BYTES
inline constexpr int kNvmlPcieRxBytes = 1;     // NVML_PCIE_UTIL_RX_BYTES

class Nvml {
 public:
  // dlopen()s `library` and nvmlInit()s it. Errors: the library cannot be opened (no driver),
  // lacks a required function, or nvmlInit fails (e.g. driver not loaded); the message says
  // which, in one line.
  static StatusOr<std::unique_ptr<Nvml>> Load(const std::string& library);
  ~Nvml();  // nvmlShutdown() and dlclose()
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  // NVML's own text for a return code ("GPU is lost", ...), or "NVML error <code>".
  std::string ErrorString(NvmlReturn code) const;

  NvmlReturn DeviceCount(unsigned int* count) const;
  NvmlReturn DeviceHandle(unsigned int index, NvmlDevice* device) const;
  NvmlReturn Name(NvmlDevice d, std::string* name) const;
  NvmlReturn Utilization(NvmlDevice d, NvmlUtilization* u) const;
  NvmlReturn Memory(NvmlDevice d, NvmlMemory* m) const;
  NvmlReturn PowerMilliwatts(NvmlDevice d, unsigned int* mw) const;
  NvmlReturn PowerLimitMilliwatts(NvmlDevice d, unsigned int* mw) const;
  NvmlReturn TemperatureC(NvmlDevice d, unsigned int* c) const;
  NvmlReturn ClockMhz(NvmlDevice d, int clock, unsigned int* mhz) const;
  // KB/s over a 20 ms window NVML measures during the call.
  NvmlReturn PcieKilobytesPerSecond(NvmlDevice d, int counter, unsigned int* kbps) const;
  // mJ since the driver was loaded (Volta and newer; others return kNvmlErrorNotSupported).
  NvmlReturn EnergyMillijoules(NvmlDevice d, unsigned long long* mj) const;  // NOLINT
  // Compute processes on the device and their memory: *count in = capacity of `infos`, out =
  // processes (kNvmlErrorInsufficientSize when more than fit).
  NvmlReturn ComputeProcesses(NvmlDevice d, unsigned int* count, NvmlProcessInfo* infos) const;
  // Per-process utilization samples newer than `since_us`; kNvmlErrorNotFound when none.
  NvmlReturn ProcessUtilization(NvmlDevice d, NvmlProcessUtilization* samples, unsigned int* count,
                                unsigned long long since_us) const;  // NOLINT

 private:
  struct Api;
  Nvml(void* handle, std::unique_ptr<Api> api);
  void* handle_;
  std::unique_ptr<Api> api_;
};

}  // namespace trainprof::system
