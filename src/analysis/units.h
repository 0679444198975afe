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

}  // namespace trainprof::analysis
