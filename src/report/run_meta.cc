#include "report/run_meta.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include "base/clock.h"
#include "base/text.h"
#include "trainprof/version.h"

namespace trainprof::report {
namespace {

std::string ReadCpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "unknown";
}

void AddHostMeta(Report& r) {
  struct utsname u {};
  if (uname(&u) == 0) {
    r.AddMeta("host.name", std::string(u.nodename));
    r.AddMeta("host.os", fmt::format("{} {} {}", u.sysname, u.release, u.machine));
  }
  r.AddMeta("host.cpu", ReadCpuModel());
  r.AddMeta("host.cores", static_cast<int64_t>(std::thread::hardware_concurrency()));
}

}  // namespace

void AddRunMeta(const RunMetaInput& in, Report& r) {
  r.AddMeta("trainprof_version", std::string(TRAINPROF_VERSION));
  r.AddMeta("created_utc", base::UtcIso8601(in.start_wall_ns));
  r.AddMeta("run_dir", in.run_dir);
  AddHostMeta(r);
  r.AddMeta("clock", std::string(base::TicksAreTsc() ? "tsc" : "steady_clock"), false);
  r.AddMeta("pid", static_cast<int64_t>(getpid()), false);
  // The steady-clock instant trace.json's timestamps count from (merging ranks' traces).
  r.AddMeta("start_steady_ns", in.start_steady_ns, false);
  struct rusage ru {};
  if (in.peak_rss_bytes >= 0) {
    r.AddMeta("peak_rss_bytes", static_cast<int64_t>(in.peak_rss_bytes), false);
  } else if (getrusage(RUSAGE_SELF, &ru) == 0) {
    r.AddMeta("peak_rss_bytes", static_cast<int64_t>(ru.ru_maxrss) * 1024, false);
  }
  r.AddMeta("wall_time_s", static_cast<double>(in.end_ns) * 1e-9, false);
  if (in.steps >= 0) r.AddMeta("steps", in.steps);
  // Scopes that began in warm-up steps (recorded to warm the buffers, then discarded).
  r.AddMeta("discarded_warmup_events", in.warmup_dropped, false);
}

void StampMeta(Report& r, int64_t unix_ns) {
  if (r.FindMeta("trainprof_version") == nullptr)
    r.AddMeta("trainprof_version", std::string(TRAINPROF_VERSION));
  if (r.FindMeta("created_utc") == nullptr) r.AddMeta("created_utc", base::UtcIso8601(unix_ns));
}

}  // namespace trainprof::report
