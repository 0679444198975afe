// A stable LSD radix sort by an int64 key, for the big sorts of reading and analysing a trace
// (flow ids, launch correlations, interval begins: tens of thousands of keys that std::sort
// compared one by one). Keys are taken less the smallest, eleven bits a pass, so times spanning
// seconds need three or four passes; small inputs use std::stable_sort.
//
//   base::RadixSortBy(calls, [](const Call& c) { return c.corr; });  // equal keys keep order
//
// And a search over what it sorted, for keys that come nearly in order (GallopLowerBound).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace trainprof::base {

template <class T, class KeyFn>
void RadixSortBy(std::vector<T>& v, KeyFn key) {
  if (v.size() < 1024) {
    std::stable_sort(v.begin(), v.end(), [&](const T& a, const T& b) { return key(a) < key(b); });
    return;
  }
  int64_t lo = key(v[0]), hi = lo;
  for (const T& x : v) {
    const int64_t k = key(x);
    lo = std::min(lo, k);
    hi = std::max(hi, k);
  }
  const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
  constexpr int kBits = 11;
  constexpr size_t kBuckets = size_t{1} << kBits;
  std::vector<T> tmp(v.size());
  std::vector<size_t> count(kBuckets);
  for (int shift = 0; shift < 64 && (span >> shift) != 0; shift += kBits) {
    const auto digit = [&](const T& x) {
      return ((static_cast<uint64_t>(key(x)) - static_cast<uint64_t>(lo)) >> shift) &
             (kBuckets - 1);
    };
    std::fill(count.begin(), count.end(), 0);
    for (const T& x : v) ++count[digit(x)];
    size_t at = 0;
    for (size_t& c : count) at += std::exchange(c, at);
    for (const T& x : v) tmp[count[digit(x)]++] = x;
    v.swap(tmp);
  }
}

// std::lower_bound(v.begin(), v.end(), value, less) as an index, searched from `from` outwards
// in steps 1, 2, 4, ... before a binary search: a key near the last one costs a few steps in
// cache rather than a cache miss per step. `from` may be any index up to v.size().
template <class T, class V, class Less>
size_t GallopLowerBound(const std::vector<T>& v, size_t from, const V& value, Less less) {
  const size_t n = v.size();
  size_t lo = 0, hi = 0, step = 1;         // the answer lies in [lo, hi]
  if (from < n && less(v[from], value)) {  // ahead: everything before lo is below value
    lo = from + 1;
    for (; lo + step <= n && less(v[lo + step - 1], value); step *= 2) lo += step;
    hi = std::min(n, lo + step - 1);
  } else {  // behind (or here): nothing from hi on is below value
    hi = std::min(from, n);
    for (; hi >= step && !less(v[hi - step], value); step *= 2) hi -= step;
    lo = hi >= step ? hi - step + 1 : 0;
  }
  const auto it = std::lower_bound(v.begin() + static_cast<std::ptrdiff_t>(lo),
                                   v.begin() + static_cast<std::ptrdiff_t>(hi), value, less);
  return static_cast<size_t>(it - v.begin());
}

}  // namespace trainprof::base
