#include "system/sampler.h"

#include <time.h>

#include <chrono>
#include <filesystem>

#include "system/sampler_state.h"

namespace trainprof::system {

using report::Severity;
using report::Unit;

int FindColumn(const std::vector<SeriesColumn>& columns, const std::string& key) {
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

}  // namespace

void SystemSampler::State::Discover() {
  self_pid = getpid();
  timespec boot{};
  clock_gettime(CLOCK_BOOTTIME, &boot);
  boot_to_steady_ns =
      base::SteadyNowNs() - (static_cast<int64_t>(boot.tv_sec) * 1'000'000'000 + boot.tv_nsec);
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

  Add("cpu_utilization_percent", "CPU utilization (all cores)", Unit::kPercent, true,
      "system/cpu_utilization_percentage");
  c_core0 = static_cast<int>(columns.size());
  for (size_t i = 0; i < n_cores; ++i) {
    Add(fmt::format("cpu{}_utilization_percent", i), fmt::format("CPU {} utilization", i),
        Unit::kPercent, false, "", true);
  }
  Add("load_average_1m", "Load average (1 min)", Unit::kNumber, false);
  Add("system_memory_used_bytes", "System memory used (total - available)", Unit::kBytes, true,
      "system/system_memory_usage_megabytes");
  Add("system_memory_used_percent", "System memory used", Unit::kPercent, false,
      "system/system_memory_usage_percentage");
  Add("swap_used_bytes", "Swap used", Unit::kBytes, false);
  Add("process_cpu_percent", "Process CPU (100 % = one core)", Unit::kPercent, true,
      "system/process_cpu_percentage");
  Add("process_rss_bytes", "Process resident memory (RSS)", Unit::kBytes, true,
      "system/process_memory_rss_megabytes");
  Add("process_vms_bytes", "Process virtual memory (VMS)", Unit::kBytes, false,
      "system/process_memory_vms_megabytes");
  Add("process_memory_percent", "Process RSS of system memory", Unit::kPercent, false,
      "system/process_memory_percentage");
  Add("process_threads", "Process threads", Unit::kCount, false, "system/process_threads");
  Add("process_open_files", "Process open files (descriptors)", Unit::kCount, false,
      "system/process_open_files");
  Add("process_count", "Processes (this one + children)", Unit::kCount, false);
  Add("process_io_read_bytes_per_s", "Process storage reads (with children)", Unit::kBytesPerSecond,
      true);
  Add("process_io_write_bytes_per_s", "Process storage writes (with children)",
      Unit::kBytesPerSecond, true);
  Add("disk_read_bytes_per_s", "Disk read", Unit::kBytesPerSecond, true);
  Add("disk_write_bytes_per_s", "Disk write", Unit::kBytesPerSecond, true);
  Add("disk_used_bytes", "Disk used (run folder's file system)", Unit::kBytes, false,
      "system/disk_usage_megabytes");
  Add("disk_available_bytes", "Disk available (run folder's file system)", Unit::kBytes, false,
      "system/disk_available_megabytes");
  Add("disk_usage_percent", "Disk usage (run folder's file system)", Unit::kPercent, false,
      "system/disk_usage_percentage");
  c_net_total = static_cast<int>(columns.size());
  Add("network_receive_bytes_per_s", "Network receive (all but lo)", Unit::kBytesPerSecond, true);
  Add("network_transmit_bytes_per_s", "Network transmit (all but lo)", Unit::kBytesPerSecond, true);
  Add("network_received_bytes", "Network received since start (all but lo)", Unit::kBytes, false,
      "system/network_receive_megabytes");
  Add("network_transmitted_bytes", "Network transmitted since start (all but lo)", Unit::kBytes,
      false, "system/network_transmit_megabytes");
  c_if0 = static_cast<int>(columns.size());
  for (const std::string& n : ifaces) {
    Add(fmt::format("net_{}_receive_bytes_per_s", n), fmt::format("Network {} receive", n),
        Unit::kBytesPerSecond, false, "", true);
    Add(fmt::format("net_{}_transmit_bytes_per_s", n), fmt::format("Network {} transmit", n),
        Unit::kBytesPerSecond, false, "", true);
  }
  c_gpu0 = static_cast<int>(columns.size());
  for (size_t i = 0; i < n_gpus; ++i) {
    for (SeriesColumn& c : GpuSource::Columns(static_cast<int>(i))) columns.push_back(c);
  }
  if (n_gpus >= 2) {
    c_gpu_avg = static_cast<int>(columns.size());
    Add("gpu_avg_utilization_percent", "GPU utilization (average over GPUs)", Unit::kPercent,
        false);
    Add("gpu_avg_memory_used_bytes", "GPU memory used (average over GPUs)", Unit::kBytes, false);
    Add("gpu_avg_memory_used_percent", "GPU memory used (average over GPUs)", Unit::kPercent,
        false);
    Add("gpu_avg_power_w", "GPU power (average over GPUs)", Unit::kWatts, false);
  }
  if (n_gpus > 0) {
    Add("process_gpu_memory_bytes", "Process GPU memory (with children, all GPUs)", Unit::kBytes,
        true);
    Add("process_gpu_util_percent", "Process GPU SM utilization (with children)", Unit::kPercent,
        false);
  }
  if (cpu_energy->available()) {
    c_cpu_power = static_cast<int>(columns.size());
    Add("cpu_power_w", fmt::format("{} power", cpu_energy->device_name()), Unit::kWatts, true);
    Add("cpu_energy_j", fmt::format("{} energy since start", cpu_energy->device_name()),
        Unit::kJoules, false);
  }
  if (!gpu->why_not().empty()) data.notes.push_back(gpu->why_not());
  if (!cpu_energy->why_not().empty()) data.notes.push_back(cpu_energy->why_not());
  if (disks.empty()) {
    data.notes.push_back(
        "Disk I/O: no physical disk in /proc/diskstats with a /sys/block/<name>/"
        "device entry; disk read and write rates are not measured");
  }
}

std::string NvmlLibraryFromEnv() {
  const char* lib = std::getenv("TRAINPROF_NVML_LIBRARY");
  return lib != nullptr ? std::string(lib) : SamplerOptions().nvml_library;
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
  const double dt = s.have_prev ? static_cast<double>(now - s.prev_t) * 1e-9 : kNaN;
  std::fill(s.row.begin(), s.row.end(), kNaN);
  s.ReadCpu(dt);
  s.ReadProcess(dt, now - s.o.t0_ns);
  s.ReadMemory();  // after the process: its RSS share needs the total
  s.ReadDisk(dt);
  s.ReadNetwork(dt);
  if (s.n_gpus > 0) {
    s.gpu->Read(s.row.data() + s.c_gpu0, dt);
    if (s.c_gpu_avg >= 0) {
      const size_t per = GpuSource::kFigures;
      const size_t figures[4] = {GpuSource::kUtil, GpuSource::kMemUsed, GpuSource::kMemUsedPct,
                                 GpuSource::kPower};
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
    d.energy.push_back(
        {s.cpu_energy->device_name(), "RAPL energy counter", s.cpu_energy->total_joules()});
  }
  for (EnergyDevice& e : s.gpu->Energy()) d.energy.push_back(std::move(e));
  s.data = SystemData();
  s.data.columns = s.columns;
  s.data.gpus = d.gpus;
  s.data.interval_s = d.interval_s;
  return d;
}

}  // namespace trainprof::system
