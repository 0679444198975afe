#include "system/sources.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "base/diagnostics.h"
#include "system/proc_parse.h"

namespace trainprof::system {

void DiagnosticSink::Add(base::DiagnosticId id, const std::string& source,
                         const std::string& message) {
  auto [it, inserted] = entries_.try_emplace({id, source});
  if (inserted) {
    it->second.d = {id, 0, message};
    it->second.order = entries_.size();
  }
  ++it->second.d.count;
}

std::vector<report::Diagnostic> DiagnosticSink::Take() const {
  std::vector<const Entry*> sorted;
  for (const auto& [key, e] : entries_) sorted.push_back(&e);
  std::ranges::sort(sorted, {}, &Entry::order);
  std::vector<report::Diagnostic> out;
  for (const Entry* e : sorted) out.push_back(e->d);
  return out;
}

int ReadFd(int fd, std::string* out) {
  out->resize(std::max<size_t>(out->capacity(), 4096));
  size_t got = 0;
  for (;;) {
    const ssize_t n = pread(fd, out->data() + got, out->size() - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      out->clear();
      return err;
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
    if (got == out->size()) out->resize(out->size() * 2);
  }
  out->resize(got);
  return 0;
}

int ReadSmallFile(const std::string& path, std::string* out) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  const int err = ReadFd(fd, out);
  close(fd);
  return err;
}

void ReportBackwards(const std::string& what, uint64_t before, uint64_t now, DiagnosticSink& d) {
  d.Add(base::DiagnosticId::kSystemCounterBackwards, what,
        fmt::format("{} went backwards ({} -> {}); that sample's rate is left out", what, before,
                    now));
}

namespace {

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

std::vector<std::string> SortedEntries(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    out.push_back(e.path().filename().string());
  }
  std::ranges::sort(out);
  return out;
}

}  // namespace

CpuEnergySource::CpuEnergySource(const std::string& root, DiagnosticSink* diagnostics)
    : diag_(diagnostics) {
  namespace fs = std::filesystem;
  std::string text;
  const std::string powercap = root + "/sys/class/powercap";
  for (const std::string& entry : SortedEntries(powercap)) {
    // Top-level zones only: "intel-rapl:0", not its sub-zones "intel-rapl:0:0".
    if (entry.rfind("intel-rapl:", 0) != 0 || std::count(entry.begin(), entry.end(), ':') != 1) {
      continue;
    }
    const std::string dir = powercap + "/" + entry;
    Zone z;
    z.name = ReadSmallFile(dir + "/name", &text) == 0 ? Trim(text) : entry;
    if (z.name == "psys") continue;  // the platform zone already contains the packages
    z.energy_path = dir + "/energy_uj";
    if (ReadSmallFile(dir + "/max_energy_range_uj", &text) != 0 ||
        !ParseSysfsU64(text, &z.range_uj)) {
      z.range_uj = 0;
    }
    zones_.push_back(std::move(z));
  }
  if (zones_.empty()) {
    const std::string hwmon = root + "/sys/class/hwmon";
    for (const std::string& entry : SortedEntries(hwmon)) {
      const std::string dir = hwmon + "/" + entry;
      if (ReadSmallFile(dir + "/name", &text) != 0 || Trim(text) != "amd_energy") continue;
      for (const std::string& f : SortedEntries(dir)) {
        if (f.rfind("energy", 0) != 0 || f.size() < 7 || f.find("_label") == std::string::npos) {
          continue;
        }
        if (ReadSmallFile(dir + "/" + f, &text) != 0) continue;
        const std::string label = Trim(text);
        if (label.rfind("Esocket", 0) != 0) continue;  // per-core counters are inside the socket
        Zone z;
        z.name = label;
        z.energy_path = dir + "/" + f.substr(0, f.find("_label")) + "_input";
        zones_.push_back(std::move(z));
      }
    }
  }
  if (zones_.empty()) {
    why_not_ = fmt::format(
        "CPU energy: no RAPL or amd_energy counters under {}/sys/class (common in virtual "
        "machines); CPU energy is not measured",
        root);
    return;
  }
  // Readable? Since Linux 5.10 energy_uj is root-only.
  const int err = ReadSmallFile(zones_[0].energy_path, &text);
  if (err != 0) {
    why_not_ = fmt::format("CPU energy: {} is not readable ({}{}); CPU energy is not measured",
                           zones_[0].energy_path, std::strerror(err),
                           err == EACCES ? ": since Linux 5.10 RAPL counters are readable by "
                                           "root only"
                                         : "");
    zones_.clear();
  }
}

std::string CpuEnergySource::device_name() const {
  std::string names;
  for (const Zone& z : zones_) names += (names.empty() ? "" : " + ") + z.name;
  return fmt::format("CPU ({})", names);
}

double CpuEnergySource::Read() {
  double joules = 0;
  bool any = false;
  for (Zone& z : zones_) {
    uint64_t uj = 0;
    const int err = ReadSmallFile(z.energy_path, &buf_);
    if (err != 0 || !ParseSysfsU64(buf_, &uj)) {
      diag_->Add(base::DiagnosticId::kSystemSourceUnreadable, z.energy_path,
                 fmt::format("cannot read {}: {}; CPU energy of that sample is missing",
                             z.energy_path, err != 0 ? std::strerror(err) : "not a number"));
      continue;
    }
    if (!z.have_last) {
      z.have_last = true;
      z.last_uj = uj;
      continue;
    }
    uint64_t delta = 0;
    if (uj >= z.last_uj) {
      delta = uj - z.last_uj;
    } else if (z.range_uj > z.last_uj) {
      delta = z.range_uj - z.last_uj + uj;  // wrapped around
    } else {
      diag_->Add(base::DiagnosticId::kSystemCounterBackwards, z.energy_path,
                 fmt::format("{} went backwards ({} -> {} µJ) and has no wrap range; that "
                             "interval's CPU energy is left out",
                             z.energy_path, z.last_uj, uj));
      z.last_uj = uj;
      continue;
    }
    z.last_uj = uj;
    joules += static_cast<double>(delta) * 1e-6;
    any = true;
  }
  if (!any) return kNaN;
  total_j_ += joules;
  return joules;
}

}  // namespace trainprof::system
