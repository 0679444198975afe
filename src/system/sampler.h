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

namespace trainprof::system {

// The NVML library to load: $TRAINPROF_NVML_LIBRARY when set (a driver outside the loader's
// path, a stand-in, or "" to switch GPU sampling off), else libnvidia-ml.so.1.
std::string NvmlLibraryFromEnv();
// The ROCm SMI library: $TRAINPROF_ROCM_SMI_LIBRARY when set ("" switches AMD GPU sampling off),
// else librocm_smi64.so.
std::string RocmSmiLibraryFromEnv();

struct SamplerOptions {
  std::string root = "/";                             // prefix of /proc and /sys
  std::string nvml_library = "libnvidia-ml.so.1";     // empty: no NVIDIA GPU sampling
  std::string rocm_smi_library = "librocm_smi64.so";  // empty: no AMD GPU sampling
  std::string disk_path = ".";                        // folder whose file system usage is sampled
  double interval_s = 1.0;
  int64_t t0_ns = 0;  // clock value that becomes time 0 of the series
  // The process whose tree (it and every descendant, also those started later) is sampled:
  // 0 for this process (a Session), the command's pid for `trainprof run`.
  int64_t root_pid = 0;
  bool per_process = false;        // also keep ProcessStats of every process of the tree
  std::function<int64_t()> clock;  // monotonic ns; default steady_clock
};

// One figure of the time series.
struct SeriesColumn {
  std::string key;    // "cpu_utilization_percent", "gpu0_power_w"
  std::string title;  // "CPU utilization (all cores)"
  report::Unit unit = report::Unit::kNumber;
  bool detail = false;  // per core or interface: summarised in a separate table
  bool trace = false;   // drawn as a counter track in trace.json
  std::string mlflow;   // MLflow's name of the same figure, "" if it has none
};

// Index of the column with `key`, or -1.
int FindColumn(const std::vector<SeriesColumn>& columns, const std::string& key);

struct EnergyDevice {
  std::string device;  // "CPU (RAPL package-0 + package-1)", "GPU 0: NVIDIA H100"
  std::string source;  // "RAPL energy counter", "NVML energy counter", "NVML power × time"
  double joules = 0;
};

struct GpuInfo {
  int index = 0;
  std::string name;
  double memory_total_bytes = 0;
  double power_limit_w = 0;  // NaN if unknown
};

// One process of the sampled tree, over the samples that saw it.
struct ProcessStats {
  int64_t pid = 0, ppid = 0;
  std::string command;                // its command line (cut at 200 characters), else its name
  int64_t start_ns = 0;               // when it started (/proc/PID/stat), ns since t0
  int64_t first_ns = 0, last_ns = 0;  // first and last sample that saw it, ns since t0
  double cpu_s = 0;                   // user + system CPU time when last seen
  double peak_rss_bytes = 0;
  double max_threads = 0;
  double read_bytes = 0, write_bytes = 0;  // storage I/O when last seen (/proc/PID/io)
  double peak_gpu_memory_bytes = 0;        // NVML, all GPUs; 0 when it used none
  double max_gpu_util_percent = -1;        // NVML SM utilization; -1: never reported
};

struct SystemData {
  std::vector<SeriesColumn> columns;
  std::vector<int64_t> t_ns;   // time of each sample, ns since t0
  std::vector<double> values;  // row-major: t_ns.size() rows of columns.size(); NaN = no value
  std::vector<GpuInfo> gpus;
  std::vector<EnergyDevice> energy;
  std::vector<ProcessStats> processes;  // SamplerOptions::per_process; by first sighting
  std::vector<std::string> notes;       // one line per source that is not there ("no NVML: ...")
  std::vector<report::Diagnostic> diagnostics;
  double interval_s = 0;
  double wall_s = 0;         // from Start() to Stop()
  double thread_cpu_s = 0;   // CPU time of the sampler thread
  int64_t reads = 0;         // samples taken by the thread, the baseline included
  double sample_mean_s = 0;  // wall time of one sample (includes time waiting for a core)
  double sample_max_s = 0;

  double At(size_t row, size_t col) const { return values[row * columns.size() + col]; }
  int Find(const std::string& key) const { return FindColumn(columns, key); }
};

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
