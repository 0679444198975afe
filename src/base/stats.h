// Order statistics shared by every part of trainprof: the median and the interpolated quantile.
// One rule for empty input everywhere: the answer is NaN ("no value"), never a made-up 0. A
// caller that shows 0 for "nothing measured" says so where it calls (`v.empty() ? 0 : Median(v)`),
// so the choice is visible at the place that makes it.
//
//   double m = base::Median({3.0, 1.0, 2.0});          // 2
//   std::vector<double> d = {1, 2, 3, 4};
//   double p90 = base::Quantile(d, 0.9);               // 3.7 (numpy's default)
//   double none = base::Median({});                    // NaN
#pragma once

#include <cstddef>
#include <limits>
#include <vector>

namespace trainprof::base {

inline constexpr double kNoValue = std::numeric_limits<double>::quiet_NaN();

// The median of `v`: the middle value, or the mean of the middle two for an even count, in
// linear time. NaN when `v` is empty.
double Median(std::vector<double> v);

// The q-quantile (q in [0, 1]) interpolated linearly between the two closest ranks (numpy's
// default, "linear"), in linear time: `v` is reordered, not sorted. NaN when `v` is empty.
double Quantile(std::vector<double>& v, double q);

// The same on data already sorted ascending, of any arithmetic type. NaN when empty.
template <class T>
double QuantileOfSorted(const std::vector<T>& sorted, double q) {
  if (sorted.empty()) return kNoValue;
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<size_t>(pos);
  const size_t hi = lo + 1 < sorted.size() ? lo + 1 : lo;
  const double frac = pos - static_cast<double>(lo);
  return static_cast<double>(sorted[lo]) + frac * static_cast<double>(sorted[hi] - sorted[lo]);
}

}  // namespace trainprof::base
