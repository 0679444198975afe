// The host as a sampler source: CPU, memory, the sampled process tree, disk and network, from
// /proc, /sys and statvfs below the sampler's root (the readers are in host_figures.cc and
// process_tree.cc). It finds the cores, interfaces and disks once, then reads them every sample.
#include <time.h>
#include <unistd.h>

#include <filesystem>

#include "system/sampler_state.h"

namespace trainprof::system {

using report::Unit;

void SamplerState::DiscoverHost() {
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
}

void SamplerState::AddHostColumns() {
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
}

namespace {

class HostSource : public Source {
 public:
  explicit HostSource(SamplerState& s) : s_(s) { s_.DiscoverHost(); }
  std::string why_not() const override {
    if (!s_.disks.empty()) return "";
    return "Disk I/O: no physical disk in /proc/diskstats with a /sys/block/<name>/device entry; "
           "disk read and write rates are not measured";
  }
  void AddColumns(std::vector<SeriesColumn>& cols) override {
    (void)cols;  // the same vector as s_.columns
    s_.AddHostColumns();
  }
  void Read(const SampleRow& row) override {
    s_.ReadCpu(row.dt_s);
    s_.ReadProcess(row.dt_s, row.t_ns);
    s_.ReadMemory();  // after the process: its RSS share needs the total
    s_.ReadDisk(row.dt_s);
    s_.ReadNetwork(row.dt_s);
  }

 private:
  SamplerState& s_;
};

}  // namespace

std::unique_ptr<Source> MakeHostSource(const SourceContext& c) {
  return std::make_unique<HostSource>(*c.sampler);
}

}  // namespace trainprof::system
