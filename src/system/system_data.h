// What the system sampler is told and what it gives back, as plain data: its options, the
// series' columns, the devices it found and the samples (SystemData). Sources (source.h) and the
// sampler's state include this, not the sampler (sampler.h), so the sampler sits above them.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "report/report.h"

namespace trainprof::system {

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

}  // namespace trainprof::system
