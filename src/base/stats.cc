#include "base/stats.h"

#include <algorithm>
#include <cstddef>

namespace trainprof::base {

double Median(std::vector<double> v) {
  if (v.empty()) return kNoValue;
  const size_t h = v.size() / 2;
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(h);
  std::nth_element(v.begin(), mid, v.end());
  const double upper = *mid;
  if (v.size() % 2 == 1) return upper;
  return 0.5 * (upper + *std::max_element(v.begin(), mid));
}

double Quantile(std::vector<double>& v, double q) {
  if (v.empty()) return kNoValue;
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<size_t>(pos);
  const auto at = v.begin() + static_cast<std::ptrdiff_t>(lo);
  std::nth_element(v.begin(), at, v.end());
  const double a = *at;
  const double b = lo + 1 < v.size() ? *std::min_element(at + 1, v.end()) : a;
  return a + (b - a) * (pos - static_cast<double>(lo));
}

}  // namespace trainprof::base
