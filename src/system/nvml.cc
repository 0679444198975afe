#include "system/nvml.h"

#include <dlfcn.h>
#include <fmt/format.h>

namespace trainprof::system {

// Function pointers with NVML's C signatures.
struct Nvml::Api {
  NvmlReturn (*init)();
  NvmlReturn (*shutdown)();
  const char* (*error_string)(NvmlReturn);
  NvmlReturn (*count)(unsigned int*);
  NvmlReturn (*handle)(unsigned int, NvmlDevice*);
  NvmlReturn (*name)(NvmlDevice, char*, unsigned int);
  NvmlReturn (*utilization)(NvmlDevice, NvmlUtilization*);
  NvmlReturn (*memory)(NvmlDevice, NvmlMemory*);
  NvmlReturn (*power)(NvmlDevice, unsigned int*);
  NvmlReturn (*power_limit)(NvmlDevice, unsigned int*);
  NvmlReturn (*temperature)(NvmlDevice, int, unsigned int*);
  NvmlReturn (*clock)(NvmlDevice, int, unsigned int*);
  NvmlReturn (*pcie)(NvmlDevice, int, unsigned int*);
  NvmlReturn (*energy)(NvmlDevice, unsigned long long*);  // NOLINT(runtime/int)
  NvmlReturn (*processes)(NvmlDevice, unsigned int*, NvmlProcessInfo*);
  NvmlReturn (*process_util)(NvmlDevice, NvmlProcessUtilization*, unsigned int*,
                             unsigned long long);  // NOLINT(runtime/int)
};

namespace {

template <typename F>
bool Bind(void* h, const char* symbol, F*& fn) {
  fn = reinterpret_cast<F*>(dlsym(h, symbol));
  return fn != nullptr;
}

// Optional functions (older drivers lack some) answer "not supported".
NvmlReturn NotSupported1(NvmlDevice, unsigned int*) { return kNvmlErrorNotSupported; }
NvmlReturn NotSupported2(NvmlDevice, int, unsigned int*) { return kNvmlErrorNotSupported; }
NvmlReturn NotSupportedEnergy(NvmlDevice, unsigned long long*) {  // NOLINT(runtime/int)
  return kNvmlErrorNotSupported;
}

NvmlReturn NotSupportedProcesses(NvmlDevice, unsigned int*, NvmlProcessInfo*) {
  return kNvmlErrorNotSupported;
}
NvmlReturn NotSupportedProcessUtil(NvmlDevice, NvmlProcessUtilization*, unsigned int*,
                                   unsigned long long) {  // NOLINT(runtime/int)
  return kNvmlErrorNotSupported;
}

}  // namespace

StatusOr<std::unique_ptr<Nvml>> Nvml::Load(const std::string& library) {
  void* h = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* err = dlerror();
    return NotFound(
        fmt::format("cannot load NVML ({}): {}", library, err != nullptr ? err : "unknown error"));
  }
  auto api = std::make_unique<Api>();
  const char* missing = nullptr;
  auto need = [&](const char* symbol, auto*& fn) {
    if (!Bind(h, symbol, fn) && missing == nullptr) missing = symbol;
  };
  need("nvmlInit_v2", api->init);
  need("nvmlShutdown", api->shutdown);
  need("nvmlDeviceGetCount_v2", api->count);
  need("nvmlDeviceGetHandleByIndex_v2", api->handle);
  need("nvmlDeviceGetName", api->name);
  need("nvmlDeviceGetUtilizationRates", api->utilization);
  need("nvmlDeviceGetMemoryInfo", api->memory);
  need("nvmlDeviceGetPowerUsage", api->power);
  if (missing != nullptr) {
    dlclose(h);
    return NotFound(fmt::format("cannot use NVML ({}): it has no function {}", library, missing));
  }
  if (!Bind(h, "nvmlErrorString", api->error_string)) api->error_string = nullptr;
  if (!Bind(h, "nvmlDeviceGetEnforcedPowerLimit", api->power_limit)) {
    api->power_limit = NotSupported1;
  }
  if (!Bind(h, "nvmlDeviceGetTemperature", api->temperature)) api->temperature = NotSupported2;
  if (!Bind(h, "nvmlDeviceGetClockInfo", api->clock)) api->clock = NotSupported2;
  if (!Bind(h, "nvmlDeviceGetPcieThroughput", api->pcie)) api->pcie = NotSupported2;
  if (!Bind(h, "nvmlDeviceGetTotalEnergyConsumption", api->energy)) {
    api->energy = NotSupportedEnergy;
  }
  if (!Bind(h, "nvmlDeviceGetComputeRunningProcesses_v3", api->processes) &&
      !Bind(h, "nvmlDeviceGetComputeRunningProcesses_v2", api->processes)) {
    api->processes = NotSupportedProcesses;
  }
  if (!Bind(h, "nvmlDeviceGetProcessUtilization", api->process_util)) {
    api->process_util = NotSupportedProcessUtil;
  }
  const NvmlReturn rc = api->init();
  if (rc != kNvmlSuccess) {
    std::string text = api->error_string != nullptr && api->error_string(rc) != nullptr
                           ? api->error_string(rc)
                           : fmt::format("NVML error {}", rc);
    dlclose(h);
    return FailedPrecondition(
        fmt::format("NVML ({}) did not initialise: {} (error {})", library, text, rc));
  }
  return std::unique_ptr<Nvml>(new Nvml(h, std::move(api)));
}

Nvml::Nvml(void* handle, std::unique_ptr<Api> api) : handle_(handle), api_(std::move(api)) {}

Nvml::~Nvml() {
  api_->shutdown();
  dlclose(handle_);
}

std::string Nvml::ErrorString(NvmlReturn code) const {
  if (api_->error_string != nullptr) {
    const char* s = api_->error_string(code);
    if (s != nullptr) return s;
  }
  return fmt::format("NVML error {}", code);
}

NvmlReturn Nvml::DeviceCount(unsigned int* count) const { return api_->count(count); }
NvmlReturn Nvml::DeviceHandle(unsigned int index, NvmlDevice* device) const {
  return api_->handle(index, device);
}
NvmlReturn Nvml::Name(NvmlDevice d, std::string* name) const {
  char buf[96] = {};  // NVML_DEVICE_NAME_V2_BUFFER_SIZE
  const NvmlReturn rc = api_->name(d, buf, sizeof(buf));
  if (rc == kNvmlSuccess) *name = std::string(buf);
  return rc;
}
NvmlReturn Nvml::Utilization(NvmlDevice d, NvmlUtilization* u) const {
  return api_->utilization(d, u);
}
NvmlReturn Nvml::Memory(NvmlDevice d, NvmlMemory* m) const { return api_->memory(d, m); }
NvmlReturn Nvml::PowerMilliwatts(NvmlDevice d, unsigned int* mw) const {
  return api_->power(d, mw);
}
NvmlReturn Nvml::PowerLimitMilliwatts(NvmlDevice d, unsigned int* mw) const {
  return api_->power_limit(d, mw);
}
NvmlReturn Nvml::TemperatureC(NvmlDevice d, unsigned int* c) const {
  return api_->temperature(d, kNvmlTemperatureGpu, c);
}
NvmlReturn Nvml::ClockMhz(NvmlDevice d, int clock, unsigned int* mhz) const {
  return api_->clock(d, clock, mhz);
}
NvmlReturn Nvml::PcieKilobytesPerSecond(NvmlDevice d, int counter, unsigned int* kbps) const {
  return api_->pcie(d, counter, kbps);
}
NvmlReturn Nvml::EnergyMillijoules(NvmlDevice d, unsigned long long* mj) const {  // NOLINT
  return api_->energy(d, mj);
}

NvmlReturn Nvml::ComputeProcesses(NvmlDevice d, unsigned int* count, NvmlProcessInfo* infos) const {
  return api_->processes(d, count, infos);
}
NvmlReturn Nvml::ProcessUtilization(NvmlDevice d, NvmlProcessUtilization* samples,
                                    unsigned int* count,
                                    unsigned long long since_us) const {  // NOLINT
  return api_->process_util(d, samples, count, since_us);
}

}  // namespace trainprof::system
