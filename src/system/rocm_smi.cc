#include "system/rocm_smi.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <utility>

#include "system/sampler.h"

namespace trainprof::system {
namespace {

template <typename F>
bool BindRsmi(void* h, const char* symbol, F*& fn, std::string& missing) {
  fn = reinterpret_cast<F*>(dlsym(h, symbol));
  if (fn == nullptr && missing.empty()) missing = symbol;
  return fn != nullptr;
}

}  // namespace

StatusOr<std::unique_ptr<RocmSmi>> RocmSmi::Load(const std::string& library) {
  void* h = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* why = dlerror();
    return NotFound(
        fmt::format("cannot load ROCm SMI ({}): {}", library, why != nullptr ? why : "not found"));
  }
  std::unique_ptr<RocmSmi> smi(new RocmSmi());
  smi->handle_ = h;
  RsmiFunctions& f = smi->f;
  std::string missing;
  BindRsmi(h, "rsmi_init", f.init, missing);
  BindRsmi(h, "rsmi_shut_down", f.shut_down, missing);
  BindRsmi(h, "rsmi_status_string", f.status_string, missing);
  BindRsmi(h, "rsmi_num_monitor_devices", f.num_devices, missing);
  BindRsmi(h, "rsmi_dev_name_get", f.name, missing);
  BindRsmi(h, "rsmi_dev_busy_percent_get", f.busy_percent, missing);
  BindRsmi(h, "rsmi_dev_memory_busy_percent_get", f.memory_busy_percent, missing);
  BindRsmi(h, "rsmi_dev_memory_total_get", f.memory_total, missing);
  BindRsmi(h, "rsmi_dev_memory_usage_get", f.memory_usage, missing);
  BindRsmi(h, "rsmi_dev_power_ave_get", f.power_ave, missing);
  BindRsmi(h, "rsmi_dev_power_cap_get", f.power_cap, missing);
  BindRsmi(h, "rsmi_dev_temp_metric_get", f.temperature, missing);
  BindRsmi(h, "rsmi_dev_energy_count_get", f.energy_count, missing);
  BindRsmi(h, "rsmi_compute_process_info_get", f.process_info, missing);
  if (!missing.empty()) {
    return FailedPrecondition(
        fmt::format("ROCm SMI ({}) lacks {}: too old a ROCm", library, missing));
  }
  if (RsmiStatus rc = f.init(0); rc != kRsmiSuccess) {
    f.shut_down = nullptr;  // nothing to shut down
    return FailedPrecondition(
        fmt::format("ROCm SMI ({}) did not initialise: {}", library, smi->ErrorString(rc)));
  }
  return smi;
}

RocmSmi::~RocmSmi() {
  if (f.shut_down != nullptr) f.shut_down();
  if (handle_ != nullptr) dlclose(handle_);
}

std::string RocmSmi::ErrorString(RsmiStatus status) const {
  const char* text = nullptr;
  if (f.status_string != nullptr && f.status_string(status, &text) == kRsmiSuccess &&
      text != nullptr) {
    return fmt::format("{} (error {})", text, status);
  }
  return fmt::format("error {}", status);
}

std::string RocmSmiLibraryFromEnv() {
  const char* lib = std::getenv("TRAINPROF_ROCM_SMI_LIBRARY");
  return lib != nullptr ? std::string(lib) : SamplerOptions().rocm_smi_library;
}

}  // namespace trainprof::system
