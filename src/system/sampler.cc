#include "system/sampler.h"

#include <fmt/format.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <unordered_map>

#include "base/clock.h"
#include "system/proc_parse.h"
#include "system/sources.h"

namespace trainprof::system {

using report::Severity;
using report::Unit;

int SystemData::Find(const std::string& key) const {
  for (size_t i = 0; i < columns.size(); ++i) {
    if (columns[i].key == key) return static_cast<int>(i);
  }
  return -1;
}

namespace {

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Calls f(name) for each entry of `dir` but "." and ".."; false if it cannot be opened.
template <typename F>
bool ForEachEntry(const std::string& dir, F&& f) {
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
  double rss = 0, vms = 0, threads = 0, files = 0, processes = 0;
};

}  // namespace

struct SystemSampler::State {
  SamplerOptions o;
  DiagnosticSink diag;
  std::unique_ptr<CpuEnergySource> cpu_energy;
  std::unique_ptr<GpuSource> gpu;
  std::vector<SeriesColumn> columns;
  std::vector<std::string> ifaces, disks;
  size_t n_cores = 0, n_gpus = 0;
  int c_core0 = 0, c_if0 = 0, c_gpu0 = 0, c_gpu_avg = -1, c_cpu_power = -1;
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
  int64_t start_ns = 0;
  double sample_total_s = 0;
  int64_t timed_samples = 0;

  std::string Path(const std::string& rel) const { return o.root + rel; }

  // Files read every sample stay open and are re-read from offset 0 (procfs regenerates them),
  // which saves the path lookup of open(): about 40 % of a sample.
  std::map<std::string, int> open_files;
  ~State() {
    for (const auto& [rel, fd] : open_files) close(fd);
  }
  int ReadKeptOpen(const std::string& rel) {
    auto it = open_files.find(rel);
    if (it == open_files.end()) {
      const int fd = open(Path(rel).c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) return errno;
      it = open_files.emplace(rel, fd).first;
    }
    buf.resize(std::max<size_t>(buf.capacity(), 4096));
    size_t got = 0;
    for (;;) {
      const ssize_t n = pread(it->second, buf.data() + got, buf.size() - got,
                              static_cast<off_t>(got));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        const int err = errno;
        close(it->second);
        open_files.erase(it);
        return err;
      }
      if (n == 0) break;
      got += static_cast<size_t>(n);
      if (got == buf.size()) buf.resize(buf.size() * 2);
    }
    buf.resize(got);
    return 0;
  }
  int64_t Now() const { return o.clock ? o.clock() : base::SteadyNowNs(); }

  // Reads root/rel into buf; a failure is a diagnostic.
  bool Read(const std::string& rel) {
    const int err = ReadKeptOpen(rel);
    if (err == 0) return true;
    diag.Add(Severity::kWarning, "system_source_unreadable", rel,
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
    diag.Add(Severity::kWarning, "system_source_malformed", rel,
             fmt::format("{}: {}; its figures are missing from those samples", Path(rel),
                         parsed.status().message()));
    return false;
  }

  void Add(std::string key, std::string title, Unit unit, Group group, bool trace,
           std::string mlflow = "", bool detail = false) {
    columns.push_back({std::move(key), std::move(title), unit, group, detail, trace,
                       std::move(mlflow)});
  }
  int Col(const std::string& key) const {
    for (size_t i = 0; i < columns.size(); ++i) {
      if (columns[i].key == key) return static_cast<int>(i);
    }
    return -1;
  }
  // Column of a fixed key, looked up once per literal (the sample path sets about 20 of them).
  std::unordered_map<const char*, int> fixed;
  void Set(const char* key, double v) {
    auto it = fixed.find(key);
    if (it == fixed.end()) it = fixed.emplace(key, Col(key)).first;
    row[it->second] = v;
  }

  void Discover();
  void ReadCpu(double dt);
  void ReadMemory();
  void ReadProcess(double dt);
  void ReadDisk(double dt);
  void ReadNetwork(double dt);
  void ListTree(const std::string& pid, std::vector<std::string>& out, int depth);
  bool ReadOneProcess(const std::string& pid, ProcTotals& t, bool self);
};

void SystemSampler::State::Discover() {
  clk_tck = static_cast<double>(sysconf(_SC_CLK_TCK));
  page_size = static_cast<double>(sysconf(_SC_PAGESIZE));
  ProcStat st;
  if (Read("/proc/stat") && Parse("/proc/stat", ParseProcStat(buf), &st)) {
    n_cores = st.cores.size();
  }
  std::vector<NetCounters> net;
  if (Read("/proc/net/dev") && Parse("/proc/net/dev", ParseNetDev(buf), &net)) {
    for (const NetCounters& n : net) ifaces.push_back(n.name);
  }
  std::vector<DiskCounters> ds;
  if (Read("/proc/diskstats") && Parse("/proc/diskstats", ParseDiskstats(buf), &ds)) {
    // Physical disks only: /sys/block/<name>/device exists for them, not for partitions,
    // loop, ram or device-mapper devices, so nothing is counted twice.
    std::error_code ec;
    for (const DiskCounters& d : ds) {
      if (std::filesystem::exists(Path("/sys/block/" + d.name + "/device"), ec)) {
        disks.push_back(d.name);
      }
    }
  }
  cpu_energy = std::make_unique<CpuEnergySource>(o.root, &diag);
  gpu = std::make_unique<GpuSource>(o.nvml_library, &diag);
  gpu->SetInterval(o.interval_s);
  n_gpus = gpu->gpus().size();

  Add("cpu_utilization_percent", "CPU utilization (all cores)", Unit::kPercent, Group::kCpu, true,
      "system/cpu_utilization_percentage");
  c_core0 = static_cast<int>(columns.size());
  for (size_t i = 0; i < n_cores; ++i) {
    Add(fmt::format("cpu{}_utilization_percent", i), fmt::format("CPU {} utilization", i),
        Unit::kPercent, Group::kCpu, false, "", true);
  }
  Add("load_average_1m", "Load average (1 min)", Unit::kNumber, Group::kCpu, false);
  Add("system_memory_used_bytes", "System memory used (total - available)", Unit::kBytes,
      Group::kMemory, true, "system/system_memory_usage_megabytes");
  Add("system_memory_used_percent", "System memory used", Unit::kPercent, Group::kMemory, false,
      "system/system_memory_usage_percentage");
  Add("swap_used_bytes", "Swap used", Unit::kBytes, Group::kMemory, false);
  Add("process_cpu_percent", "Process CPU (100 % = one core)", Unit::kPercent, Group::kProcess,
      true, "system/process_cpu_percentage");
  Add("process_rss_bytes", "Process resident memory (RSS)", Unit::kBytes, Group::kProcess, true,
      "system/process_memory_rss_megabytes");
  Add("process_vms_bytes", "Process virtual memory (VMS)", Unit::kBytes, Group::kProcess, false,
      "system/process_memory_vms_megabytes");
  Add("process_memory_percent", "Process RSS of system memory", Unit::kPercent, Group::kProcess,
      false, "system/process_memory_percentage");
  Add("process_threads", "Process threads", Unit::kCount, Group::kProcess, false,
      "system/process_threads");
  Add("process_open_files", "Process open files (descriptors)", Unit::kCount, Group::kProcess,
      false, "system/process_open_files");
  Add("process_count", "Processes (this one + children)", Unit::kCount, Group::kProcess, false);
  Add("disk_read_bytes_per_s", "Disk read", Unit::kBytesPerSecond, Group::kDisk, true);
  Add("disk_write_bytes_per_s", "Disk write", Unit::kBytesPerSecond, Group::kDisk, true);
  Add("disk_used_bytes", "Disk used (run folder's file system)", Unit::kBytes, Group::kDisk,
      false, "system/disk_usage_megabytes");
  Add("disk_available_bytes", "Disk available (run folder's file system)", Unit::kBytes,
      Group::kDisk, false, "system/disk_available_megabytes");
  Add("disk_usage_percent", "Disk usage (run folder's file system)", Unit::kPercent, Group::kDisk,
      false, "system/disk_usage_percentage");
  c_net_total = static_cast<int>(columns.size());
  Add("network_receive_bytes_per_s", "Network receive (all but lo)", Unit::kBytesPerSecond,
      Group::kNetwork, true);
  Add("network_transmit_bytes_per_s", "Network transmit (all but lo)", Unit::kBytesPerSecond,
      Group::kNetwork, true);
  Add("network_received_bytes", "Network received since start (all but lo)", Unit::kBytes,
      Group::kNetwork, false, "system/network_receive_megabytes");
  Add("network_transmitted_bytes", "Network transmitted since start (all but lo)", Unit::kBytes,
      Group::kNetwork, false, "system/network_transmit_megabytes");
  c_if0 = static_cast<int>(columns.size());
  for (const std::string& n : ifaces) {
    Add(fmt::format("net_{}_receive_bytes_per_s", n), fmt::format("Network {} receive", n),
        Unit::kBytesPerSecond, Group::kNetwork, false, "", true);
    Add(fmt::format("net_{}_transmit_bytes_per_s", n), fmt::format("Network {} transmit", n),
        Unit::kBytesPerSecond, Group::kNetwork, false, "", true);
  }
  c_gpu0 = static_cast<int>(columns.size());
  for (size_t i = 0; i < n_gpus; ++i) {
    for (SeriesColumn& c : GpuSource::Columns(static_cast<int>(i))) columns.push_back(c);
  }
  if (n_gpus >= 2) {
    c_gpu_avg = static_cast<int>(columns.size());
    Add("gpu_avg_utilization_percent", "GPU utilization (average over GPUs)", Unit::kPercent,
        Group::kGpu, false);
    Add("gpu_avg_memory_used_bytes", "GPU memory used (average over GPUs)", Unit::kBytes,
        Group::kGpu, false);
    Add("gpu_avg_memory_used_percent", "GPU memory used (average over GPUs)", Unit::kPercent,
        Group::kGpu, false);
    Add("gpu_avg_power_w", "GPU power (average over GPUs)", Unit::kWatts, Group::kGpu, false);
  }
  if (cpu_energy->available()) {
    c_cpu_power = static_cast<int>(columns.size());
    Add("cpu_power_w", fmt::format("{} power", cpu_energy->device_name()), Unit::kWatts,
        Group::kEnergy, true);
    Add("cpu_energy_j", fmt::format("{} energy since start", cpu_energy->device_name()),
        Unit::kJoules, Group::kEnergy, false);
  }
  if (!gpu->why_not().empty()) data.notes.push_back(gpu->why_not());
  if (!cpu_energy->why_not().empty()) data.notes.push_back(cpu_energy->why_not());
  if (disks.empty()) {
    data.notes.push_back("Disk I/O: no physical disk in /proc/diskstats with a /sys/block/<name>/"
                         "device entry; disk read and write rates are not measured");
  }
}

void SystemSampler::State::ReadCpu(double dt) {
  ProcStat st;
  const bool ok = Read("/proc/stat") && Parse("/proc/stat", ParseProcStat(buf), &st);
  if (ok && prev_stat_ok && !std::isnan(dt)) {
    auto util = [&](const CpuTimes& now, const CpuTimes& before, const auto& what) {
      const double total = CounterDelta(now.total, before.total, what, diag);
      const double busy = CounterDelta(now.busy, before.busy, what, diag);
      if (std::isnan(total) || std::isnan(busy) || total <= 0) return kNaN;
      return std::min(100.0, 100.0 * busy / total);
    };
    Set("cpu_utilization_percent", util(st.all, prev_stat.all, "/proc/stat cpu"));
    for (size_t i = 0; i < n_cores; ++i) {
      const bool both = i < st.cores.size() && st.present[i] && i < prev_stat.cores.size() &&
                        prev_stat.present[i];
      auto what = [i] { return fmt::format("/proc/stat cpu{}", i); };
      row[c_core0 + i] = both ? util(st.cores[i], prev_stat.cores[i], what) : kNaN;
    }
  }
  prev_stat_ok = ok;
  if (ok) prev_stat = std::move(st);
  std::array<double, 3> load{};
  if (Read("/proc/loadavg") && Parse("/proc/loadavg", ParseLoadavg(buf), &load)) {
    Set("load_average_1m", load[0]);
  }
}

void SystemSampler::State::ReadMemory() {
  Meminfo m;
  if (!Read("/proc/meminfo") || !Parse("/proc/meminfo", ParseMeminfo(buf), &m)) return;
  const double used = static_cast<double>(m.total) - static_cast<double>(m.available);
  Set("system_memory_used_bytes", used);
  if (m.total > 0) Set("system_memory_used_percent", 100.0 * used / static_cast<double>(m.total));
  Set("swap_used_bytes", static_cast<double>(m.swap_total) - static_cast<double>(m.swap_free));
  const int rss = Col("process_rss_bytes");
  if (!std::isnan(row[rss]) && m.total > 0) {
    Set("process_memory_percent", 100.0 * row[rss] / static_cast<double>(m.total));
  }
}

// Descendants of `pid` from /proc/<pid>/task/<tid>/children (every thread can fork).
void SystemSampler::State::ListTree(const std::string& pid, std::vector<std::string>& out,
                                    int depth) {
  if (depth > 8) return;
  const std::string task = Path("/proc/" + pid + "/task/");
  std::vector<int64_t> children;
  ForEachEntry(task, [&](const char* tid) {
    if (ReadSmallFile(task + tid + "/children", &buf) != 0) return;
    for (int64_t child : ParsePidList(buf)) children.push_back(child);
  });
  for (int64_t child : children) {
    out.push_back(std::to_string(child));
    ListTree(out.back(), out, depth + 1);
  }
}

bool SystemSampler::State::ReadOneProcess(const std::string& pid, ProcTotals& t, bool self) {
  const std::string rel = "/proc/" + pid + "/stat";
  PidStat ps;
  if (self) {
    if (!Read(rel) || !Parse(rel, ParsePidStat(buf), &ps)) return false;
  } else {
    // A child may exit between listing and reading: not a problem worth a diagnostic.
    if (ReadSmallFile(Path(rel), &buf) != 0) return true;
    if (!Parse(rel, ParsePidStat(buf), &ps)) return true;
  }
  t.jiffies += ps.utime + ps.stime + ps.cutime + ps.cstime;
  t.rss += static_cast<double>(ps.rss_pages) * page_size;
  t.vms += static_cast<double>(ps.vsize);
  t.threads += static_cast<double>(ps.threads);
  t.processes += 1;
  ForEachEntry(Path("/proc/" + pid + "/fd"), [&](const char*) { t.files += 1; });
  return true;
}

void SystemSampler::State::ReadProcess(double dt) {
  ProcTotals t;
  if (!ReadOneProcess("self", t, true)) {
    prev_proc_ok = false;
    return;
  }
  std::vector<std::string> tree;
  ListTree("self", tree, 0);
  for (const std::string& pid : tree) ReadOneProcess(pid, t, false);
  Set("process_rss_bytes", t.rss);
  Set("process_vms_bytes", t.vms);
  Set("process_threads", t.threads);
  Set("process_open_files", t.files);
  Set("process_count", t.processes);
  if (prev_proc_ok && !std::isnan(dt) && dt > 0) {
    const double d = CounterDelta(t.jiffies, prev_proc, "process CPU time (with children)", diag);
    Set("process_cpu_percent", 100.0 * d / clk_tck / dt);
  }
  prev_proc = t.jiffies;
  prev_proc_ok = true;
}

void SystemSampler::State::ReadDisk(double dt) {
  struct statvfs vfs{};
  if (statvfs(o.disk_path.c_str(), &vfs) == 0) {
    const double frsize = static_cast<double>(vfs.f_frsize);
    const double used = static_cast<double>(vfs.f_blocks - vfs.f_bfree) * frsize;
    const double avail = static_cast<double>(vfs.f_bavail) * frsize;
    Set("disk_used_bytes", used);
    Set("disk_available_bytes", avail);
    if (used + avail > 0) Set("disk_usage_percent", 100.0 * used / (used + avail));
  } else {
    diag.Add(Severity::kWarning, "system_source_unreadable", o.disk_path,
             fmt::format("cannot stat the file system of {}: {}; disk usage is missing",
                         o.disk_path, std::strerror(errno)));
  }
  if (disks.empty()) return;
  std::vector<DiskCounters> ds;
  if (!Read("/proc/diskstats") || !Parse("/proc/diskstats", ParseDiskstats(buf), &ds)) {
    prev_disk_ok = false;
    return;
  }
  uint64_t r = 0, w = 0;
  for (const DiskCounters& d : ds) {
    if (std::ranges::find(disks, d.name) == disks.end()) continue;
    r += d.sectors_read * 512;
    w += d.sectors_written * 512;
  }
  if (prev_disk_ok && !std::isnan(dt) && dt > 0) {
    Set("disk_read_bytes_per_s", CounterDelta(r, prev_disk_r, "/proc/diskstats reads", diag) / dt);
    Set("disk_write_bytes_per_s",
        CounterDelta(w, prev_disk_w, "/proc/diskstats writes", diag) / dt);
  }
  prev_disk_r = r;
  prev_disk_w = w;
  prev_disk_ok = true;
}

void SystemSampler::State::ReadNetwork(double dt) {
  std::vector<NetCounters> net;
  if (!Read("/proc/net/dev") || !Parse("/proc/net/dev", ParseNetDev(buf), &net)) {
    prev_net_ok = false;
    return;
  }
  auto find = [](const std::vector<NetCounters>& v, const std::string& name) {
    auto it = std::ranges::find(v, name, &NetCounters::name);
    return it == v.end() ? nullptr : &*it;
  };
  if (net_start_rx.empty()) {
    for (const std::string& n : ifaces) {
      const NetCounters* c = find(net, n);
      net_start_rx.push_back(c != nullptr ? c->rx_bytes : 0);
      net_start_tx.push_back(c != nullptr ? c->tx_bytes : 0);
    }
  }
  double rx = 0, tx = 0, rx_total = 0, tx_total = 0;
  bool rates = prev_net_ok && !std::isnan(dt) && dt > 0;
  for (size_t i = 0; i < ifaces.size(); ++i) {
    const NetCounters* now = find(net, ifaces[i]);
    const NetCounters* before = rates ? find(prev_net, ifaces[i]) : nullptr;
    if (now == nullptr) continue;  // the interface went away
    const bool lo = ifaces[i] == "lo";
    if (!lo) {
      rx_total += now->rx_bytes >= net_start_rx[i] ? now->rx_bytes - net_start_rx[i] : 0;
      tx_total += now->tx_bytes >= net_start_tx[i] ? now->tx_bytes - net_start_tx[i] : 0;
    }
    if (before == nullptr) continue;
    auto what = [&] { return "/proc/net/dev " + ifaces[i]; };
    const double r = CounterDelta(now->rx_bytes, before->rx_bytes, what, diag) / dt;
    const double t = CounterDelta(now->tx_bytes, before->tx_bytes, what, diag) / dt;
    row[c_if0 + 2 * i] = r;
    row[c_if0 + 2 * i + 1] = t;
    if (!lo) {
      rx += r;
      tx += t;
    }
  }
  if (rates) {
    row[c_net_total] = rx;
    row[c_net_total + 1] = tx;
  }
  row[c_net_total + 2] = rx_total;
  row[c_net_total + 3] = tx_total;
  prev_net = std::move(net);
  prev_net_ok = true;
}

// ---- SystemSampler ------------------------------------------------------------------------

SystemSampler::SystemSampler(std::unique_ptr<State> state) : s_(std::move(state)) {}

SystemSampler::~SystemSampler() { Stop(); }

std::unique_ptr<SystemSampler> SystemSampler::Create(SamplerOptions options) {
  auto s = std::make_unique<State>();
  s->o = std::move(options);
  if (s->o.root.empty()) s->o.root = "/";
  if (s->o.root == "/") s->o.root = "";  // paths are root + "/proc/..."
  s->Discover();
  s->data.columns = s->columns;
  s->data.gpus = s->gpu->gpus();
  s->data.interval_s = s->o.interval_s;
  s->row.assign(s->columns.size(), kNaN);
  return std::unique_ptr<SystemSampler>(new SystemSampler(std::move(s)));
}

const std::vector<SeriesColumn>& SystemSampler::columns() const { return s_->columns; }

void SystemSampler::SampleOnce() {
  State& s = *s_;
  const auto wall0 = std::chrono::steady_clock::now();
  const int64_t now = s.Now();
  if (!s.have_prev) s.start_ns = now;
  const double dt = s.have_prev ? static_cast<double>(now - s.prev_t) * 1e-9 : kNaN;
  std::fill(s.row.begin(), s.row.end(), kNaN);
  s.ReadCpu(dt);
  s.ReadProcess(dt);
  s.ReadMemory();  // after the process: its RSS share needs the total
  s.ReadDisk(dt);
  s.ReadNetwork(dt);
  if (s.n_gpus > 0) {
    s.gpu->Read(s.row.data() + s.c_gpu0, dt);
    if (s.c_gpu_avg >= 0) {
      const size_t per = GpuSource::Columns(0).size();
      const size_t figures[4] = {0, 2, 3, 4};  // utilization, memory bytes, memory %, power
      for (int k = 0; k < 4; ++k) {
        double sum = 0;
        int n = 0;
        for (size_t g = 0; g < s.n_gpus; ++g) {
          const double v = s.row[s.c_gpu0 + g * per + figures[k]];
          if (!std::isnan(v)) {
            sum += v;
            ++n;
          }
        }
        s.row[s.c_gpu_avg + k] = n > 0 ? sum / n : kNaN;
      }
    }
  }
  if (s.c_cpu_power >= 0) {
    const double j = s.cpu_energy->Read();
    if (!std::isnan(j) && dt > 0) s.row[s.c_cpu_power] = j / dt;
    if (s.have_prev) s.row[s.c_cpu_power + 1] = s.cpu_energy->total_joules();
  }
  if (s.have_prev) {
    s.data.t_ns.push_back(now - s.o.t0_ns);
    s.data.values.insert(s.data.values.end(), s.row.begin(), s.row.end());
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    s.sample_total_s += took;
    ++s.timed_samples;
    s.data.sample_max_s = std::max(s.data.sample_max_s, took);
  }
  s.have_prev = true;
  s.prev_t = now;
}

void SystemSampler::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (running_) return;
  running_ = true;
  stop_ = false;
  thread_ = std::thread([this] { Run(); });
}

void SystemSampler::Run() {
  const double cpu0 = ThreadCpuSeconds();
  const auto wall0 = std::chrono::steady_clock::now();
  SampleOnce();  // baseline
  int64_t reads = 1;
  const auto period = std::chrono::nanoseconds(static_cast<int64_t>(s_->o.interval_s * 1e9));
  auto next = wall0 + period;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (cv_.wait_until(lock, next, [this] { return stop_; })) break;
    lock.unlock();
    SampleOnce();
    ++reads;
    lock.lock();
    next += period;
    const auto now = std::chrono::steady_clock::now();
    if (next < now) next = now + period;  // fell behind (machine overloaded): skip, no burst
  }
  lock.unlock();
  // A last sample, so the end of the run (and a run shorter than one interval) is covered.
  if (std::chrono::steady_clock::now() - wall0 > std::chrono::milliseconds(10)) {
    SampleOnce();
    ++reads;
  }
  s_->data.reads = reads;
  s_->data.thread_cpu_s = ThreadCpuSeconds() - cpu0;
  s_->data.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
}

void SystemSampler::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!running_) return;
    stop_ = true;
    running_ = false;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

SystemData SystemSampler::TakeData() {
  State& s = *s_;
  SystemData d = std::move(s.data);
  d.diagnostics = s.diag.Take();
  d.sample_mean_s = s.timed_samples > 0 ? s.sample_total_s / s.timed_samples : 0;
  d.energy.clear();
  if (s.cpu_energy->available()) {
    d.energy.push_back({s.cpu_energy->device_name(), "RAPL energy counter",
                        s.cpu_energy->total_joules()});
  }
  for (EnergyDevice& e : s.gpu->Energy()) d.energy.push_back(std::move(e));
  s.data = SystemData();
  s.data.columns = s.columns;
  s.data.gpus = d.gpus;
  s.data.interval_s = d.interval_s;
  return d;
}

}  // namespace trainprof::system
