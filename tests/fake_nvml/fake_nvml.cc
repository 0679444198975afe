// A stand-in for libnvidia-ml.so.1, built by the tests and loaded by the sampler with dlopen.
// It exports the NVML functions trainprof uses with NVML's C signatures, and control functions
// (fake_nvml_*) the tests call through their own dlopen handle of the same file to set device
// counts, figures and errors. A process that never calls them (the CLI test, run through
// TRAINPROF_NVML_LIBRARY) gets FAKE_NVML_DEVICES GPUs with fixed figures and an energy counter
// that moves 30 J per reading; with FAKE_NVML_CHILD_GPU_MEMORY=<bytes> every child of the
// calling process is a compute process using that much memory at 40 % SM utilization.
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace {

constexpr int kMaxDevices = 8;

struct FakeDevice {
  std::map<std::string, double> values;
  std::map<std::string, int> errors;  // figure -> return code ("*": every call)
};

struct FakeProcess {
  unsigned int pid;
  double memory_bytes;
  unsigned int sm_util;
};

struct FakeState {
  std::vector<FakeProcess> processes[kMaxDevices];
  int init_error = 0;
  int devices = 0;
  FakeDevice dev[kMaxDevices];
  int pcie_calls = 0;
  int initialised = 0;
  bool configured = false;  // by a fake_nvml_* call; else from FAKE_NVML_DEVICES
  bool energy_moves = false;
};

FakeState& State() {
  static FakeState s;
  return s;
}

FakeDevice* Dev(void* handle) { return static_cast<FakeDevice*>(handle); }

// The return code for `figure` of `handle`, 0 if it has no error.
int ErrorOf(void* handle, const char* figure) {
  FakeDevice* d = Dev(handle);
  auto all = d->errors.find("*");
  if (all != d->errors.end()) return all->second;
  auto it = d->errors.find(figure);
  return it == d->errors.end() ? 0 : it->second;
}

double ValueOf(void* handle, const char* figure) {
  auto it = Dev(handle)->values.find(figure);
  return it == Dev(handle)->values.end() ? 0 : it->second;
}

struct Memory {
  unsigned long long total, free, used;  // NOLINT(runtime/int)
};
struct ProcessInfo {
  unsigned int pid;
  unsigned long long used;  // NOLINT(runtime/int)
  unsigned int gi, ci;
};
struct ProcessSample {
  unsigned int pid;
  unsigned long long ts;  // NOLINT(runtime/int)
  unsigned int sm, mem, enc, dec;
};

// The configured processes of a device, plus the calling process's children when
// FAKE_NVML_CHILD_GPU_MEMORY is set.
std::vector<FakeProcess> ProcessesOf(void* handle) {
  FakeState& s = State();
  const int index = static_cast<int>(Dev(handle) - s.dev);
  std::vector<FakeProcess> out = s.processes[index];
  if (const char* mem = std::getenv("FAKE_NVML_CHILD_GPU_MEMORY")) {
    std::ifstream in("/proc/self/task/" + std::to_string(getpid()) + "/children");
    unsigned int pid = 0;
    while (in >> pid) out.push_back({pid, std::atof(mem), 40});
  }
  return out;
}
struct Utilization {
  unsigned int gpu, memory;
};

}  // namespace

extern "C" {

// ---- control ------------------------------------------------------------------------------
void fake_nvml_reset(int devices) {
  FakeState& s = State();
  s = FakeState();
  s.devices = devices;
  s.configured = true;
}
void fake_nvml_set_init_error(int rc) { State().init_error = rc; }
void fake_nvml_set_value(int device, const char* figure, double v) {
  State().dev[device].values[figure] = v;
}
void fake_nvml_set_error(int device, const char* figure, int rc) {
  State().dev[device].errors[figure] = rc;
}
void fake_nvml_add_process(int device, unsigned int pid, double memory_bytes,
                           unsigned int sm_util) {
  State().processes[device].push_back({pid, memory_bytes, sm_util});
}
int fake_nvml_pcie_calls() { return State().pcie_calls; }
int fake_nvml_initialised() { return State().initialised; }

// ---- NVML ---------------------------------------------------------------------------------
int nvmlInit_v2() {
  FakeState& s = State();
  const char* env = std::getenv("FAKE_NVML_DEVICES");
  if (!s.configured && env != nullptr) {
    s.configured = true;
    s.energy_moves = true;
    s.devices = std::atoi(env);
    for (int g = 0; g < s.devices && g < kMaxDevices; ++g) {
      s.dev[g].values = {{"util", 75},       {"memutil", 40},      {"mem_total", 80e9},
                         {"mem_used", 12e9}, {"power_mw", 300000}, {"limit_mw", 700000},
                         {"temp", 58},       {"sm_clock", 1755},   {"mem_clock", 2619},
                         {"pcie_tx", 5000},  {"pcie_rx", 9000},    {"energy_mj", 0}};
    }
  }
  if (s.init_error != 0) return s.init_error;
  ++State().initialised;
  return 0;
}
int nvmlShutdown() {
  --State().initialised;
  return 0;
}
const char* nvmlErrorString(int rc) {
  switch (rc) {
    case 3:
      return "Not Supported";
    case 9:
      return "Driver Not Loaded";
    case 15:
      return "GPU is lost";
    case 999:
      return "Unknown Error";
    default:
      return "Fake NVML error";
  }
}
int nvmlDeviceGetCount_v2(unsigned int* count) {
  *count = static_cast<unsigned int>(State().devices);
  return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void** device) {
  if (index >= static_cast<unsigned int>(State().devices)) return 2;
  *device = &State().dev[index];
  return 0;
}
int nvmlDeviceGetName(void* d, char* name, unsigned int length) {
  if (int rc = ErrorOf(d, "name")) return rc;
  std::strncpy(name, "Fake GPU 80GB", length);
  return 0;
}
int nvmlDeviceGetUtilizationRates(void* d, Utilization* u) {
  if (int rc = ErrorOf(d, "util")) return rc;
  u->gpu = static_cast<unsigned int>(ValueOf(d, "util"));
  u->memory = static_cast<unsigned int>(ValueOf(d, "memutil"));
  return 0;
}
int nvmlDeviceGetMemoryInfo(void* d, Memory* m) {
  if (int rc = ErrorOf(d, "memory")) return rc;
  m->total = static_cast<unsigned long long>(ValueOf(d, "mem_total"));  // NOLINT(runtime/int)
  m->used = static_cast<unsigned long long>(ValueOf(d, "mem_used"));    // NOLINT(runtime/int)
  m->free = m->total - m->used;
  return 0;
}
int nvmlDeviceGetPowerUsage(void* d, unsigned int* mw) {
  if (int rc = ErrorOf(d, "power")) return rc;
  *mw = static_cast<unsigned int>(ValueOf(d, "power_mw"));
  return 0;
}
int nvmlDeviceGetEnforcedPowerLimit(void* d, unsigned int* mw) {
  if (int rc = ErrorOf(d, "limit")) return rc;
  *mw = static_cast<unsigned int>(ValueOf(d, "limit_mw"));
  return 0;
}
int nvmlDeviceGetTemperature(void* d, int sensor, unsigned int* c) {
  if (int rc = ErrorOf(d, "temp")) return rc;
  *c = static_cast<unsigned int>(ValueOf(d, "temp"));
  return sensor == 0 ? 0 : 2;
}
int nvmlDeviceGetClockInfo(void* d, int clock, unsigned int* mhz) {
  if (int rc = ErrorOf(d, "clock")) return rc;
  *mhz = static_cast<unsigned int>(ValueOf(d, clock == 1 ? "sm_clock" : "mem_clock"));
  return 0;
}
int nvmlDeviceGetPcieThroughput(void* d, int counter, unsigned int* kbps) {
  ++State().pcie_calls;
  if (int rc = ErrorOf(d, "pcie")) return rc;
  *kbps = static_cast<unsigned int>(ValueOf(d, counter == 0 ? "pcie_tx" : "pcie_rx"));
  return 0;
}
int nvmlDeviceGetTotalEnergyConsumption(void* d, unsigned long long* mj) {  // NOLINT
  if (int rc = ErrorOf(d, "energy")) return rc;
  if (State().energy_moves) Dev(d)->values["energy_mj"] += 30000;
  *mj = static_cast<unsigned long long>(ValueOf(d, "energy_mj"));  // NOLINT(runtime/int)
  return 0;
}

int nvmlDeviceGetComputeRunningProcesses_v3(void* d, unsigned int* count, ProcessInfo* infos) {
  if (int rc = ErrorOf(d, "processes")) return rc;
  const std::vector<FakeProcess> ps = ProcessesOf(d);
  const unsigned int capacity = *count;
  *count = static_cast<unsigned int>(ps.size());
  if (ps.size() > capacity) return 7;  // NVML_ERROR_INSUFFICIENT_SIZE
  for (size_t i = 0; i < ps.size(); ++i) {
    infos[i] = {ps[i].pid, static_cast<unsigned long long>(ps[i].memory_bytes), 0, 0};  // NOLINT
  }
  return 0;
}
int nvmlDeviceGetProcessUtilization(void* d, ProcessSample* samples, unsigned int* count,
                                    unsigned long long since) {  // NOLINT(runtime/int)
  if (int rc = ErrorOf(d, "process_util")) return rc;
  const std::vector<FakeProcess> ps = ProcessesOf(d);
  if (ps.empty()) return 6;  // NVML_ERROR_NOT_FOUND: no sample
  const unsigned int capacity = *count;
  *count = static_cast<unsigned int>(ps.size());
  if (ps.size() > capacity) return 7;
  for (size_t i = 0; i < ps.size(); ++i)
    samples[i] = {ps[i].pid, since + 1, ps[i].sm_util, 0, 0, 0};
  return 0;
}

}  // extern "C"
