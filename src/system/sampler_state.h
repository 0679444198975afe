// Internal: the sampler's state, shared by sampler.cc (discovery, the thread) and
// host_figures.cc (the /proc and /sys readers). Not part of any public surface.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "system/proc_parse.h"
#include "system/sources.h"
#include "system/system_data.h"

namespace trainprof::system {

// Calls f(name) for each entry of `dir` but "." and ".."; false if it cannot be opened.
template <typename F>
inline bool ForEachEntry(const std::string& dir, F&& f) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return false;
  while (const dirent* e = readdir(d)) {
    if (e->d_name[0] == '.' && (e->d_name[1] == 0 || (e->d_name[1] == '.' && e->d_name[2] == 0))) {
      continue;
    }
    f(e->d_name);
  }
  closedir(d);
  return true;
}

// Process figures summed over this process and its descendants.
struct ProcTotals {
  uint64_t jiffies = 0;
  uint64_t io_read = 0, io_write = 0;
  double rss = 0, vms = 0, threads = 0, files = 0, processes = 0;
};

struct SamplerState {
  SamplerOptions o;
  DiagnosticSink diag;
  // SamplerSources() as made for this sampler, each with the index of its first column.
  std::vector<std::unique_ptr<Source>> sources;
  std::vector<size_t> source_first;
  std::vector<GpuInfo> gpus;  // of every source, in index order
  std::vector<SeriesColumn> columns;
  std::vector<std::string> ifaces, disks;
  size_t n_cores = 0;
  int c_core0 = 0, c_if0 = 0;
  int c_net_total = 0;  // rx/s, tx/s, rx total, tx total
  std::string buf;
  double clk_tck = 100, page_size = 4096;

  // Counters of the previous sample.
  bool have_prev = false;
  int64_t prev_t = 0;
  ProcStat prev_stat;
  bool prev_stat_ok = false;
  uint64_t prev_proc = 0;
  bool prev_proc_ok = false;
  uint64_t prev_disk_r = 0, prev_disk_w = 0;
  bool prev_disk_ok = false;
  std::vector<NetCounters> prev_net;
  std::vector<uint64_t> net_start_rx, net_start_tx;  // per interface, at the baseline
  bool prev_net_ok = false;

  SystemData data;
  std::vector<double> row;
  double sample_total_s = 0;
  int64_t timed_samples = 0;

  std::string Path(const std::string& rel) const { return o.root + rel; }

  // Files read every sample stay open and are re-read from offset 0 (procfs regenerates them),
  // which saves the path lookup of open(): about 40 % of a sample.
  std::map<std::string, int> open_files;
  ~SamplerState() {
    for (const auto& [rel, fd] : open_files) close(fd);
    for (const auto& [rel, f] : proc_fds) close(f.fd);
  }
  int ReadKeptOpen(const std::string& rel) {
    auto it = open_files.find(rel);
    if (it == open_files.end()) {
      const int fd = open(Path(rel).c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) return errno;
      it = open_files.emplace(rel, fd).first;
    }
    const int err = ReadFd(it->second, &buf);
    if (err != 0) {  // opened again next time
      close(it->second);
      open_files.erase(it);
    }
    return err;
  }
  int64_t Now() const { return o.clock ? o.clock() : base::SteadyNowNs(); }

  // Reads root/rel into buf; a failure is a diagnostic.
  bool Read(const std::string& rel) {
    const int err = ReadKeptOpen(rel);
    if (err == 0) return true;
    diag.Add(base::DiagnosticId::kSystemSourceUnreadable, rel,
             fmt::format("cannot read {}: {}; its figures are missing from those samples",
                         Path(rel), std::strerror(err)));
    return false;
  }
  template <typename T>
  bool Parse(const std::string& rel, StatusOr<T> parsed, T* out) {
    if (parsed.ok()) {
      *out = std::move(*parsed);
      return true;
    }
    diag.Add(base::DiagnosticId::kSystemSourceMalformed, rel,
             fmt::format("{}: {}; its figures are missing from those samples", Path(rel),
                         parsed.status().message()));
    return false;
  }

  void Add(std::string key, std::string title, report::Unit unit, bool trace,
           std::string mlflow = "", bool detail = false) {
    columns.push_back({std::move(key), std::move(title), unit, detail, trace, std::move(mlflow)});
  }
  // Column of a fixed key, looked up once per literal (the sample path sets about 20 of them).
  std::unordered_map<const char*, int> fixed;
  double& Cell(const char* key) {
    auto it = fixed.find(key);
    if (it == fixed.end()) it = fixed.emplace(key, FindColumn(columns, key)).first;
    return row[it->second];
  }
  void Set(const char* key, double v) { Cell(key) = v; }

  void Discover();
  void DiscoverHost();
  void AddHostColumns();
  void ReadCpu(double dt);
  void ReadMemory();
  void ReadProcess(double dt, int64_t t_ns);
  void ReadDisk(double dt);
  void ReadNetwork(double dt);
  // process_tree.cc
  int ReadProcFile(const std::string& rel);
  void SweepProcFiles();
  void Children(std::string pid, int64_t threads, std::vector<std::string>& out);
  // The process's thread count (>= 1); 0 when it is gone; -1 when this process's own cannot
  // be read (a diagnostic).
  int64_t ReadOneProcess(const std::string& pid, ProcTotals& t, bool root, int64_t t_ns);
  void UpdateProcessStats(int64_t id, const std::string& pid, const PidStat& ps, const PidIo* io,
                          int64_t t_ns);
  struct ProcFd {
    int fd = -1;
    int64_t sample = 0;  // the last sample that read it
  };
  std::unordered_map<std::string, ProcFd> proc_fds;
  int64_t sample_no = 0;
  bool count_files = true;
  double last_files = kNaN;
  void ReadProcessGpu(const std::vector<int64_t>& pids);
  std::string RootPid() const { return o.root_pid > 0 ? std::to_string(o.root_pid) : "self"; }
  uint64_t prev_io_read = 0, prev_io_write = 0;        // the tree's storage I/O at the last sample
  std::unordered_map<int64_t, size_t> proc_index;      // pid -> data.processes
  std::unordered_map<int64_t, std::string> proc_comm;  // pid -> its name when last read
  int64_t self_pid = 0;
  int64_t boot_to_steady_ns = 0;  // steady clock - boot clock (CLOCK_BOOTTIME)
};

}  // namespace trainprof::system
