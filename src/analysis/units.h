// Nanoseconds as the report's seconds and as findings' milliseconds: the one conversion every
// computation and section uses.
#pragma once

#include <cstdint>

namespace trainprof::analysis {

// Nanoseconds as the report's seconds.
inline double Seconds(int64_t ns) { return static_cast<double>(ns) / 1e9; }
inline double Seconds(double ns) { return ns / 1e9; }
// Nanoseconds as milliseconds, as findings' text gives them.
inline double Ms(double ns) { return ns / 1e6; }
// A part of a whole in percent; 0 when the whole is not positive.
inline double Percent(int64_t part, int64_t whole) {
  return whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

}  // namespace trainprof::analysis
