#include "system/proc_parse.h"

#include <fmt/format.h>

#include <charconv>
#include <cstdlib>

namespace trainprof::system {
namespace {

// Splits `text` into lines and each line into whitespace-separated fields.
class Lines {
 public:
  explicit Lines(std::string_view text) : rest_(text) {}
  bool Next(std::string_view& line) {
    if (rest_.empty()) return false;
    const size_t nl = rest_.find('\n');
    line = rest_.substr(0, nl);
    rest_ = nl == std::string_view::npos ? std::string_view() : rest_.substr(nl + 1);
    ++number_;
    return true;
  }
  int number() const { return number_; }

 private:
  std::string_view rest_;
  int number_ = 0;
};

std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    const size_t b = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > b) out.push_back(line.substr(b, i - b));
  }
  return out;
}

bool ToU64(std::string_view s, uint64_t& v) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && p == s.data() + s.size();
}

bool ToI64(std::string_view s, int64_t& v) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && p == s.data() + s.size();
}

bool ToDouble(std::string_view s, double& v) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && p == s.data() + s.size();
}

Status Malformed(int line, std::string_view what) {
  return InvalidArgument(fmt::format("line {}: {}", line, what));
}

}  // namespace

StatusOr<ProcStat> ParseProcStat(std::string_view text) {
  ProcStat out;
  bool have_all = false;
  Lines lines(text);
  std::string_view line;
  while (lines.Next(line)) {
    if (line.substr(0, 3) != "cpu") continue;
    std::vector<std::string_view> f = Fields(line);
    if (f.size() < 5) return Malformed(lines.number(), "a cpu line with fewer than 4 counters");
    // user nice system idle iowait irq softirq steal (guest times are already in user/nice).
    uint64_t v[8] = {};
    for (size_t i = 1; i < f.size() && i <= 8; ++i) {
      if (!ToU64(f[i], v[i - 1])) {
        return Malformed(lines.number(), fmt::format("'{}' is not a counter", f[i]));
      }
    }
    CpuTimes t;
    t.busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
    t.total = t.busy + v[3] + v[4];
    if (f[0] == "cpu") {
      out.all = t;
      have_all = true;
      continue;
    }
    uint64_t core = 0;
    if (!ToU64(f[0].substr(3), core) || core > 65535) {
      return Malformed(lines.number(), fmt::format("'{}' is not a CPU name", f[0]));
    }
    if (out.cores.size() <= core) {
      out.cores.resize(core + 1);
      out.present.resize(core + 1, false);
    }
    out.cores[core] = t;
    out.present[core] = true;
  }
  if (!have_all) return InvalidArgument("no 'cpu' line");
  return out;
}

StatusOr<Meminfo> ParseMeminfo(std::string_view text) {
  Meminfo m;
  bool total = false, available = false;
  Lines lines(text);
  std::string_view line;
  while (lines.Next(line)) {
    std::vector<std::string_view> f = Fields(line);
    if (f.size() < 2) continue;
    uint64_t* dst = nullptr;
    if (f[0] == "MemTotal:") {
      dst = &m.total;
      total = true;
    } else if (f[0] == "MemAvailable:") {
      dst = &m.available;
      available = true;
    } else if (f[0] == "SwapTotal:") {
      dst = &m.swap_total;
    } else if (f[0] == "SwapFree:") {
      dst = &m.swap_free;
    } else {
      continue;
    }
    uint64_t kb = 0;
    if (!ToU64(f[1], kb)) {
      return Malformed(lines.number(), fmt::format("'{}' is not a size in kB", f[1]));
    }
    *dst = kb * 1024;
  }
  if (!total) return InvalidArgument("no MemTotal line");
  if (!available) return InvalidArgument("no MemAvailable line (kernel older than 3.14?)");
  return m;
}

StatusOr<PidStat> ParsePidStat(std::string_view text) {
  // "pid (comm) state ppid ..."; comm may hold spaces and parentheses, so cut at the last ')'.
  const size_t close = text.rfind(')');
  if (close == std::string_view::npos) return Malformed(1, "no ')' after the command name");
  std::vector<std::string_view> f = Fields(text.substr(close + 1));
  // f[0] is field 3 (state); field N is f[N - 3].
  if (f.size() < 22) {
    return Malformed(
        1, fmt::format("{} fields after the command name, expected at least 22", f.size()));
  }
  PidStat s;
  const size_t open = text.find('(');
  if (open != std::string_view::npos && open < close)
    s.comm = text.substr(open + 1, close - open - 1);
  if (!f[0].empty()) s.state = f[0][0];
  if (!ToI64(f[1], s.ppid)) return Malformed(1, fmt::format("field 4 '{}' is not a pid", f[1]));
  uint64_t* u64[] = {&s.utime, &s.stime, &s.cutime, &s.cstime};
  for (int i = 0; i < 4; ++i) {
    int64_t v = 0;  // cutime and cstime are signed in proc(5)
    if (!ToI64(f[11 + i], v) || v < 0) {
      return Malformed(1, fmt::format("field {} '{}' is not a counter", 14 + i, f[11 + i]));
    }
    *u64[i] = static_cast<uint64_t>(v);
  }
  if (!ToI64(f[17], s.threads)) {
    return Malformed(1, fmt::format("field 20 '{}' is not a thread count", f[17]));
  }
  if (!ToU64(f[19], s.starttime)) {
    return Malformed(1, fmt::format("field 22 '{}' is not a start time", f[19]));
  }
  if (!ToU64(f[20], s.vsize))
    return Malformed(1, fmt::format("field 23 '{}' is not a size", f[20]));
  int64_t rss = 0;
  if (!ToI64(f[21], rss) || rss < 0) {
    return Malformed(1, fmt::format("field 24 '{}' is not a page count", f[21]));
  }
  s.rss_pages = static_cast<uint64_t>(rss);
  return s;
}

StatusOr<PidIo> ParsePidIo(std::string_view text) {
  PidIo io;
  bool have_read = false, have_write = false;
  Lines lines(text);
  std::string_view line;
  while (lines.Next(line)) {
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view key = line.substr(0, colon);
    uint64_t* target = key == "read_bytes"    ? &io.read_bytes
                       : key == "write_bytes" ? &io.write_bytes
                                              : nullptr;
    if (target == nullptr) continue;
    std::vector<std::string_view> v = Fields(line.substr(colon + 1));
    if (v.size() != 1 || !ToU64(v[0], *target)) {
      return Malformed(lines.number(), fmt::format("{} is not a byte count", key));
    }
    (key == "read_bytes" ? have_read : have_write) = true;
  }
  if (!have_read || !have_write) {
    return Malformed(lines.number(), "no read_bytes and write_bytes lines");
  }
  return io;
}

StatusOr<std::vector<NetCounters>> ParseNetDev(std::string_view text) {
  std::vector<NetCounters> out;
  Lines lines(text);
  std::string_view line;
  while (lines.Next(line)) {
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;  // the two header lines
    std::vector<std::string_view> name = Fields(line.substr(0, colon));
    if (name.size() != 1) continue;
    std::vector<std::string_view> f = Fields(line.substr(colon + 1));
    NetCounters c;
    c.name = std::string(name[0]);
    if (f.size() < 9 || !ToU64(f[0], c.rx_bytes) || !ToU64(f[8], c.tx_bytes)) {
      return Malformed(
          lines.number(),
          fmt::format("interface '{}' lacks its receive and transmit byte counters", c.name));
    }
    out.push_back(std::move(c));
  }
  return out;
}

StatusOr<std::vector<DiskCounters>> ParseDiskstats(std::string_view text) {
  std::vector<DiskCounters> out;
  Lines lines(text);
  std::string_view line;
  while (lines.Next(line)) {
    std::vector<std::string_view> f = Fields(line);
    if (f.empty()) continue;
    // major minor name reads merged sectors_read ms writes merged sectors_written ...
    DiskCounters d;
    if (f.size() < 10 || !ToU64(f[5], d.sectors_read) || !ToU64(f[9], d.sectors_written)) {
      return Malformed(lines.number(), "a device line without sector counters");
    }
    d.name = std::string(f[2]);
    out.push_back(std::move(d));
  }
  return out;
}

StatusOr<std::array<double, 3>> ParseLoadavg(std::string_view text) {
  std::vector<std::string_view> f = Fields(text.substr(0, text.find('\n')));
  std::array<double, 3> out{};
  if (f.size() < 3) return Malformed(1, "fewer than 3 load averages");
  for (int i = 0; i < 3; ++i) {
    if (!ToDouble(f[i], out[i])) return Malformed(1, fmt::format("'{}' is not a number", f[i]));
  }
  return out;
}

bool ParseSysfsU64(std::string_view text, uint64_t* v) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  return !text.empty() && ToU64(text, *v);
}

std::vector<int64_t> ParsePidList(std::string_view text) {
  std::vector<int64_t> out;
  for (std::string_view f : Fields(text.substr(0, text.find('\n')))) {
    int64_t pid = 0;
    if (ToI64(f, pid) && pid > 0) out.push_back(pid);
  }
  return out;
}

}  // namespace trainprof::system
