#include "base/clock.h"

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

namespace trainprof::base {
namespace {

bool DetectInvariantTsc() {
#if defined(__x86_64__) || defined(__i386__)
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) == 0) {
      auto has = [&](const char* f) {
        return line.find(std::string(" ") + f) != std::string::npos;
      };
      return has("constant_tsc") && has("nonstop_tsc");
    }
  }
#endif
  return false;
}

}  // namespace

bool TicksAreTsc() { return ::trainprof::internal::g_use_tsc; }

int64_t SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t WallNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

ClockPair ClockPair::Now() {
  // Bracket the steady_clock read by two tick reads and keep the middle, so the pair's error is
  // half the bracket.
  ClockPair p;
  uint64_t t0 = Ticks();
  p.steady_ns = SteadyNowNs();
  uint64_t t1 = Ticks();
  p.ticks = t0 + (t1 - t0) / 2;
  p.wall_ns = WallNowNs();
  return p;
}

TickConverter TickConverter::Fit(const ClockPair& a, const ClockPair& b) {
  TickConverter c;
  c.origin_ = a;
  if (!TicksAreTsc()) {
    c.ns_per_tick_ = 1.0;
    return c;
  }
  ClockPair end = b;
  // Too short a baseline gives a poor slope: widen it to at least 10 ms.
  if (end.steady_ns - a.steady_ns < 10'000'000) {
    std::this_thread::sleep_for(
        std::chrono::nanoseconds(10'000'000 - (end.steady_ns - a.steady_ns)));
    end = ClockPair::Now();
  }
  double dt = static_cast<double>(end.ticks - a.ticks);
  c.ns_per_tick_ = dt > 0 ? static_cast<double>(end.steady_ns - a.steady_ns) / dt : 1.0;
  return c;
}

int64_t TickConverter::ToNs(uint64_t ticks) const {
  double d = static_cast<double>(static_cast<int64_t>(ticks - origin_.ticks)) * ns_per_tick_;
  return origin_.steady_ns + static_cast<int64_t>(d);
}

}  // namespace trainprof::base

namespace trainprof::internal {
bool g_use_tsc = base::DetectInvariantTsc();
uint64_t SlowTicks() noexcept { return static_cast<uint64_t>(base::SteadyNowNs()); }
}  // namespace trainprof::internal
