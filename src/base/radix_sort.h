// A stable LSD radix sort by an int64 key, for the big sorts of reading and analysing a trace
// (flow ids, launch correlations, interval begins: tens of thousands of keys that std::sort
// compared one by one). Keys are taken less the smallest, eleven bits a pass, so times spanning
// seconds need three or four passes; small inputs use std::stable_sort.
//
//   base::RadixSortBy(calls, [](const Call& c) { return c.corr; });  // equal keys keep order
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

}  // namespace trainprof::base
