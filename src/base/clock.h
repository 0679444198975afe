// Clocks for the hot path. Ticks() reads the CPU's time-stamp counter where it is invariant
// (x86 with constant_tsc and nonstop_tsc) and steady_clock otherwise; a TickConverter fitted on
// two (ticks, steady ns) pairs turns ticks into nanoseconds afterwards.
//
//   uint64_t t0 = base::Ticks();  ...  uint64_t t1 = base::Ticks();
//   base::TickConverter conv = base::TickConverter::Fit(start_pair, base::ClockPair::Now());
//   double ns = conv.ToNs(t1) - conv.ToNs(t0);
#pragma once

#include <cstdint>

#include "trainprof/scope.h"

namespace trainprof::base {

// Nanoseconds of std::chrono::steady_clock.
int64_t SteadyNowNs();
// Nanoseconds since the Unix epoch (system_clock).
int64_t WallNowNs();

// True when Ticks() reads the TSC (decided once, at start-up, from /proc/cpuinfo).
bool TicksAreTsc();

// A monotonic tick count: TSC cycles or steady_clock ns. Cheap (about 10 ns with the TSC).
inline uint64_t Ticks() { return ::trainprof::internal::Ticks(); }

// A tick reading and a steady_clock reading taken together.
struct ClockPair {
  uint64_t ticks = 0;
  int64_t steady_ns = 0;
  int64_t wall_ns = 0;
  static ClockPair Now();
};

// Maps ticks to steady_clock nanoseconds by a line through two ClockPairs.
class TickConverter {
 public:
  TickConverter() = default;
  static TickConverter Fit(const ClockPair& a, const ClockPair& b);
  // steady_clock ns for a tick value.
  int64_t ToNs(uint64_t ticks) const;
  double ns_per_tick() const { return ns_per_tick_; }

 private:
  ClockPair origin_;
  double ns_per_tick_ = 1.0;
};

}  // namespace trainprof::base
