// Parsers of the Linux /proc files the system sampler reads. Each takes the file's text and
// returns the figures or an error naming the line that could not be read; they never touch the
// file system, so tests feed them any text.
//
//   StatusOr<system::Meminfo> m = system::ParseMeminfo(text);
//   if (m.ok()) used = m->total - m->available;
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trainprof/status.h"

namespace trainprof::system {

// Jiffies of one "cpu" line of /proc/stat.
struct CpuTimes {
  uint64_t busy = 0;   // user + nice + system + irq + softirq + steal
  uint64_t total = 0;  // busy + idle + iowait
};

struct ProcStat {
  CpuTimes all;
  // Indexed by CPU number; `present` false where the line is missing (CPU offline).
  std::vector<CpuTimes> cores;
  std::vector<bool> present;
};

// /proc/stat. Errors: no "cpu " line, or a cpu line with fewer than 4 numbers.
StatusOr<ProcStat> ParseProcStat(std::string_view text);

// /proc/meminfo, in bytes.
struct Meminfo {
  uint64_t total = 0;
  uint64_t available = 0;
  uint64_t swap_total = 0;
  uint64_t swap_free = 0;
};
// Errors: MemTotal or MemAvailable missing (kernels before 3.14 lack MemAvailable).
StatusOr<Meminfo> ParseMeminfo(std::string_view text);

// /proc/<pid>/stat, the fields the sampler uses.
struct PidStat {
  std::string comm;  // the command name (up to 15 characters)
  char state = 'R';  // R, S, D, Z (zombie: ended, not yet waited for), ...
  int64_t ppid = 0;
  uint64_t utime = 0, stime = 0;    // jiffies, this process
  uint64_t cutime = 0, cstime = 0;  // jiffies, children already waited for
  int64_t threads = 0;
  uint64_t starttime = 0;  // clock ticks after boot
  uint64_t vsize = 0;      // bytes
  uint64_t rss_pages = 0;  // pages
};
// Errors: no ")" after the command name, or fewer than 24 fields.
StatusOr<PidStat> ParsePidStat(std::string_view text);

// /proc/<pid>/io: bytes this process caused to be read from and written to storage.
struct PidIo {
  uint64_t read_bytes = 0, write_bytes = 0;
};
// Errors: read_bytes or write_bytes missing or not a number.
StatusOr<PidIo> ParsePidIo(std::string_view text);

// One interface of /proc/net/dev.
struct NetCounters {
  std::string name;
  uint64_t rx_bytes = 0, tx_bytes = 0;
};
// Errors: a line with an interface name but fewer than 9 numbers.
StatusOr<std::vector<NetCounters>> ParseNetDev(std::string_view text);

// One device of /proc/diskstats.
struct DiskCounters {
  std::string name;
  uint64_t sectors_read = 0, sectors_written = 0;  // 512-byte sectors, whatever the device
};
// Errors: a line with fewer than 10 fields.
StatusOr<std::vector<DiskCounters>> ParseDiskstats(std::string_view text);

// /proc/loadavg: the 1, 5 and 15 minute averages. Errors: fewer than 3 numbers.
StatusOr<std::array<double, 3>> ParseLoadavg(std::string_view text);

// A sysfs file holding one unsigned number ("262143328850\n"). False if it holds anything else.
bool ParseSysfsU64(std::string_view text, uint64_t* v);

// /proc/<pid>/task/<tid>/children: space-separated pids (empty text: none).
std::vector<int64_t> ParsePidList(std::string_view text);

}  // namespace trainprof::system
