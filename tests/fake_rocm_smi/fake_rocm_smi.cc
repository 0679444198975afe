// A stand-in for librocm_smi64.so, built by the tests and loaded by the sampler with dlopen. It
// exports the ROCm SMI functions trainprof uses with ROCm SMI's C signatures, and control
// functions (fake_rsmi_*) the tests call through their own dlopen handle of the same file. A
// process that never calls them gets FAKE_RSMI_DEVICES GPUs (default 0). GPU i reports
// utilization 60 + 10 i %, memory bandwidth use 25 %, 192 GiB of VRAM with 16 + 8 i GiB used,
// 400 + 100 i W average power of a 750 W cap, an edge temperature of 50 + i °C, and an energy
// counter that moves 1,000,000 counts of 15.25 µJ (15.25 J) per reading. With
// FAKE_RSMI_CHILD_VRAM=<bytes>, every child of the calling process uses that much VRAM at 30 %
// compute-unit occupancy (for `trainprof run`'s process tree).
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {

struct FakeProcess {
  uint32_t pid;
  uint64_t vram;
  uint32_t cu;
};

struct FakeState {
  bool configured = false;
  int devices = 0;
  int init_error = 0;
  int power_error = 0;  // returned by rsmi_dev_power_ave_get when set
  uint64_t energy[8] = {};
  std::vector<FakeProcess> processes;
};

FakeState& State() {
  static FakeState s;
  if (!s.configured) {
    s.configured = true;
    const char* n = std::getenv("FAKE_RSMI_DEVICES");
    s.devices = n != nullptr ? std::atoi(n) : 0;
  }
  return s;
}

bool Bad(uint32_t dev) { return static_cast<int>(dev) >= State().devices; }

struct ProcessInfo {  // rsmi_process_info_t
  uint32_t process_id, pasid;
  uint64_t vram_usage, sdma_usage;
  uint32_t cu_occupancy;
};

// The configured processes, and the calling process's children with FAKE_RSMI_CHILD_VRAM.
std::vector<FakeProcess> Processes() {
  std::vector<FakeProcess> all = State().processes;
  if (const char* vram = std::getenv("FAKE_RSMI_CHILD_VRAM")) {
    std::ifstream in("/proc/self/task/" + std::to_string(getpid()) + "/children");
    for (uint32_t pid = 0; in >> pid;) all.push_back({pid, std::strtoull(vram, nullptr, 10), 30});
  }
  return all;
}

}  // namespace

extern "C" {

void fake_rsmi_reset(int devices) {
  FakeState& s = State();
  s = FakeState();
  s.configured = true;
  s.devices = devices;
}
void fake_rsmi_set_init_error(int rc) { State().init_error = rc; }
void fake_rsmi_set_power_error(int rc) { State().power_error = rc; }
void fake_rsmi_add_process(uint32_t pid, uint64_t vram, uint32_t cu) {
  State().processes.push_back({pid, vram, cu});
}

int rsmi_init(uint64_t) { return State().init_error; }
int rsmi_shut_down() { return 0; }
int rsmi_status_string(int status, const char** text) {
  *text = status == 2 ? "RSMI_STATUS_NOT_SUPPORTED: not supported" : "RSMI_STATUS_FAKE_ERROR";
  return 0;
}
int rsmi_num_monitor_devices(uint32_t* n) {
  *n = static_cast<uint32_t>(State().devices);
  return 0;
}
int rsmi_dev_name_get(uint32_t dev, char* name, size_t len) {
  if (Bad(dev)) return 1;
  std::strncpy(name, "AMD Instinct MI300X", len - 1);
  return 0;
}
int rsmi_dev_busy_percent_get(uint32_t dev, uint32_t* p) {
  if (Bad(dev)) return 1;
  *p = 60 + 10 * dev;
  return 0;
}
int rsmi_dev_memory_busy_percent_get(uint32_t dev, uint32_t* p) {
  if (Bad(dev)) return 1;
  *p = 25;
  return 0;
}
int rsmi_dev_memory_total_get(uint32_t dev, int, uint64_t* b) {
  if (Bad(dev)) return 1;
  *b = 192ull << 30;
  return 0;
}
int rsmi_dev_memory_usage_get(uint32_t dev, int, uint64_t* b) {
  if (Bad(dev)) return 1;
  *b = static_cast<uint64_t>(16 + 8 * dev) << 30;
  return 0;
}
int rsmi_dev_power_ave_get(uint32_t dev, uint32_t, uint64_t* uw) {
  if (Bad(dev)) return 1;
  if (State().power_error != 0) return State().power_error;
  *uw = (400 + 100 * dev) * 1000000ull;
  return 0;
}
int rsmi_dev_power_cap_get(uint32_t dev, uint32_t, uint64_t* uw) {
  if (Bad(dev)) return 1;
  *uw = 750000000ull;
  return 0;
}
int rsmi_dev_temp_metric_get(uint32_t dev, uint32_t, uint32_t, int64_t* mc) {
  if (Bad(dev)) return 1;
  *mc = (50 + static_cast<int64_t>(dev)) * 1000;
  return 0;
}
int rsmi_dev_energy_count_get(uint32_t dev, uint64_t* count, float* resolution, uint64_t* ts) {
  if (Bad(dev)) return 1;
  State().energy[dev] += 1000000;
  *count = State().energy[dev];
  *resolution = 15.25f;
  *ts = 0;
  return 0;
}

int rsmi_compute_process_info_get(ProcessInfo* procs, uint32_t* n) {
  const std::vector<FakeProcess> all = Processes();
  if (procs == nullptr) {
    *n = static_cast<uint32_t>(all.size());
    return 0;
  }
  uint32_t k = 0;
  for (; k < *n && k < all.size(); ++k) procs[k] = {all[k].pid, 0, all[k].vram, 0, all[k].cu};
  *n = k;
  return 0;
}

}  // extern "C"
