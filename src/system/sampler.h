// The system sampler: a background thread that reads CPU, memory, process, disk, network, GPU
// (NVML, ROCm SMI) and CPU energy (RAPL) figures every `interval_s` and keeps them as a time
// series. Every file is read below `root` ("/" in production, tests/fake_root/ in tests). A source
// that is missing, malformed or failing becomes a counted diagnostic and NaN values; the sampler
// never stops the program it observes.
//
//   system::SamplerOptions o;
//   o.disk_path = run_dir;
//   o.interval_s = 0.1;
//   auto sampler = system::SystemSampler::Create(o);
//   sampler->Start();
//   ...train...
//   sampler->Stop();                       // takes a last sample, joins the thread
//   system::SystemData data = sampler->TakeData();
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "report/report.h"
#include "system/system_data.h"

namespace trainprof::system {

// The NVML library to load: $TRAINPROF_NVML_LIBRARY when set (a driver outside the loader's
// path, a stand-in, or "" to switch GPU sampling off), else libnvidia-ml.so.1.
std::string NvmlLibraryFromEnv();
// The ROCm SMI library: $TRAINPROF_ROCM_SMI_LIBRARY when set ("" switches AMD GPU sampling off),
// else librocm_smi64.so.
std::string RocmSmiLibraryFromEnv();

struct SamplerState;  // sampler_state.h

class SystemSampler {
 public:
  // Discovers the sources (CPUs, interfaces, disks, GPUs, RAPL zones). Never fails: a source
  // that is not there is noted and its figures are left out.
  static std::unique_ptr<SystemSampler> Create(SamplerOptions options);
  ~SystemSampler();  // Stop()s
  SystemSampler(const SystemSampler&) = delete;
  SystemSampler& operator=(const SystemSampler&) = delete;

  // Reads the baseline counters and starts the thread.
  void Start();
  // Takes a last sample, stops and joins the thread. Safe to call twice.
  void Stop();
  // Reads every source once and appends a sample, on the calling thread (tests, benchmarks).
  // The first call after Create() only reads the baseline of the counters.
  void SampleOnce();
  // The collected series; call after Stop() (or from the thread that calls SampleOnce()).
  SystemData TakeData();

  const std::vector<SeriesColumn>& columns() const;
  // The latest sample, for the live view while the sampler runs: its values in columns()
  // order and its time (ns since t0); t_ns -1 before the first. Any thread.
  struct Latest {
    int64_t t_ns = -1;
    std::vector<double> values;
  };
  Latest LatestSample() const;

 private:
  explicit SystemSampler(std::unique_ptr<SamplerState> state);
  void Run();

  std::unique_ptr<SamplerState> s_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool running_ = false;
  mutable std::mutex latest_mu_;
  Latest latest_;
};

}  // namespace trainprof::system
