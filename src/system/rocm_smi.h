// ROCm SMI (librocm_smi64), AMD's GPU management library, loaded at run time with dlopen as NVML
// is, so trainprof runs where ROCm is not installed. Only the functions the sampler needs are
// declared, with the types and constants of ROCm SMI's public C API (rocm_smi/rocm_smi.h).
//
//   auto smi = system::RocmSmi::Load("librocm_smi64.so");
//   uint32_t n = 0;
//   if (smi.ok() && (*smi)->f.num_devices(&n) == system::kRsmiSuccess) ...
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "trainprof/status.h"

namespace trainprof::system {

using RsmiStatus = int;  // rsmi_status_t
inline constexpr RsmiStatus kRsmiSuccess = 0;
inline constexpr RsmiStatus kRsmiNotSupported = 2;
inline constexpr RsmiStatus kRsmiInsufficientSize = 0xB;
inline constexpr int kRsmiMemVram = 0;           // RSMI_MEM_TYPE_VRAM
inline constexpr uint32_t kRsmiTempEdge = 0;     // RSMI_TEMP_TYPE_EDGE
inline constexpr uint32_t kRsmiTempCurrent = 0;  // RSMI_TEMP_CURRENT

struct RsmiProcessInfo {  // rsmi_process_info_t
  uint32_t process_id;
  uint32_t pasid;
  uint64_t vram_usage;    // bytes
  uint64_t sdma_usage;    // µs
  uint32_t cu_occupancy;  // percent
};

struct RsmiFunctions {
  RsmiStatus (*init)(uint64_t flags);
  RsmiStatus (*shut_down)();
  RsmiStatus (*status_string)(RsmiStatus status, const char** text);
  RsmiStatus (*num_devices)(uint32_t* count);
  RsmiStatus (*name)(uint32_t dev, char* name, size_t len);
  RsmiStatus (*busy_percent)(uint32_t dev, uint32_t* percent);
  RsmiStatus (*memory_busy_percent)(uint32_t dev, uint32_t* percent);
  RsmiStatus (*memory_total)(uint32_t dev, int type, uint64_t* bytes);
  RsmiStatus (*memory_usage)(uint32_t dev, int type, uint64_t* bytes);
  RsmiStatus (*power_ave)(uint32_t dev, uint32_t sensor, uint64_t* microwatts);
  RsmiStatus (*power_cap)(uint32_t dev, uint32_t sensor, uint64_t* microwatts);
  RsmiStatus (*temperature)(uint32_t dev, uint32_t sensor, uint32_t metric, int64_t* millicelsius);
  RsmiStatus (*energy_count)(uint32_t dev, uint64_t* count, float* resolution_uj,
                             uint64_t* timestamp_ns);
  RsmiStatus (*process_info)(RsmiProcessInfo* procs, uint32_t* count);
};

class RocmSmi {
 public:
  // dlopen()s `library` and rsmi_init()s it. Errors, in one line: the library cannot be opened
  // (ROCm not installed), lacks a function, or rsmi_init fails.
  static StatusOr<std::unique_ptr<RocmSmi>> Load(const std::string& library);
  ~RocmSmi();  // rsmi_shut_down() and dlclose()
  RocmSmi(const RocmSmi&) = delete;
  RocmSmi& operator=(const RocmSmi&) = delete;
  // "RSMI_STATUS_NOT_SUPPORTED: ..." as the library says it, else "error N".
  std::string ErrorString(RsmiStatus status) const;
  RsmiFunctions f{};

 private:
  RocmSmi() = default;
  void* handle_ = nullptr;
};

// RocmSmiLibraryFromEnv() (system/sampler.h) names the library to load.

}  // namespace trainprof::system
