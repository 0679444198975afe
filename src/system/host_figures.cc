// The host figures of a sample: CPU, memory, process tree, disk and network, from /proc and
// statvfs. Each reader fills its columns of `row` and leaves NaN where a source failed.
#include <sys/statvfs.h>

#include <cmath>

#include "system/sampler_state.h"

namespace trainprof::system {

using report::Severity;

void SamplerState::ReadCpu(double dt) {
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

void SamplerState::ReadMemory() {
  Meminfo m;
  if (!Read("/proc/meminfo") || !Parse("/proc/meminfo", ParseMeminfo(buf), &m)) return;
  const double used = static_cast<double>(m.total) - static_cast<double>(m.available);
  Set("system_memory_used_bytes", used);
  if (m.total > 0) Set("system_memory_used_percent", 100.0 * used / static_cast<double>(m.total));
  Set("swap_used_bytes", static_cast<double>(m.swap_total) - static_cast<double>(m.swap_free));
  const double rss = Cell("process_rss_bytes");
  if (!std::isnan(rss) && m.total > 0) {
    Set("process_memory_percent", 100.0 * rss / static_cast<double>(m.total));
  }
}

void SamplerState::ReadDisk(double dt) {
  struct statvfs vfs {};
  if (statvfs(o.disk_path.c_str(), &vfs) == 0) {
    const double frsize = static_cast<double>(vfs.f_frsize);
    const double used = static_cast<double>(vfs.f_blocks - vfs.f_bfree) * frsize;
    const double avail = static_cast<double>(vfs.f_bavail) * frsize;
    Set("disk_used_bytes", used);
    Set("disk_available_bytes", avail);
    if (used + avail > 0) Set("disk_usage_percent", 100.0 * used / (used + avail));
  } else {
    diag.Add(base::DiagnosticId::kSystemSourceUnreadable, o.disk_path,
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

void SamplerState::ReadNetwork(double dt) {
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

}  // namespace trainprof::system
