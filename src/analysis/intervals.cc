#include "analysis/intervals.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace trainprof::analysis {

namespace {

// Sorts by begin. Big inputs (a category's events, tens of thousands) go by radix on the begin
// less the smallest, eleven bits a pass: begins are nanosecond times spanning seconds, so three
// or four passes, where std::sort took a tenth of the analyses. The order of equal begins is
// not std::sort's, which Union's result does not depend on.
void SortByBegin(Intervals& v) {
  const auto by_begin = [](const Interval& a, const Interval& b) { return a.begin < b.begin; };
  if (v.size() < 1024) {
    std::sort(v.begin(), v.end(), by_begin);
    return;
  }
  auto [lo, hi] = std::minmax_element(v.begin(), v.end(), by_begin);
  const int64_t base = lo->begin;
  const uint64_t span = static_cast<uint64_t>(hi->begin) - static_cast<uint64_t>(base);
  constexpr int kBits = 11;
  constexpr size_t kBuckets = size_t{1} << kBits;
  Intervals tmp(v.size());
  std::vector<size_t> count(kBuckets);
  for (int shift = 0; shift < 64 && (span >> shift) != 0; shift += kBits) {
    const auto digit = [&](const Interval& i) {
      return ((static_cast<uint64_t>(i.begin) - static_cast<uint64_t>(base)) >> shift) &
             (kBuckets - 1);
    };
    std::fill(count.begin(), count.end(), 0);
    for (const Interval& i : v) ++count[digit(i)];
    size_t at = 0;
    for (size_t& c : count) at += std::exchange(c, at);
    for (const Interval& i : v) tmp[count[digit(i)]++] = i;
    v.swap(tmp);
  }
}

}  // namespace

// In place: the union is never larger than its input, so no second buffer is needed.
Intervals Union(Intervals v) {
  SortByBegin(v);
  size_t n = 0;
  for (const Interval& i : v) {
    if (i.end <= i.begin) continue;
    if (n > 0 && i.begin <= v[n - 1].end)
      v[n - 1].end = std::max(v[n - 1].end, i.end);
    else
      v[n++] = i;
  }
  v.resize(n);
  v.shrink_to_fit();
  return v;
}

int64_t Length(const Intervals& disjoint) {
  int64_t n = 0;
  for (const Interval& i : disjoint) n += i.end - i.begin;
  return n;
}

Intervals Intersect(const Intervals& a, const Intervals& b) {
  Intervals out;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    int64_t lo = std::max(a[i].begin, b[j].begin);
    int64_t hi = std::min(a[i].end, b[j].end);
    if (lo < hi) out.push_back({lo, hi});
    if (a[i].end < b[j].end)
      ++i;
    else
      ++j;
  }
  return out;
}

Intervals Subtract(const Intervals& a, const Intervals& b) {
  Intervals out;
  size_t j = 0;
  for (Interval cur : a) {
    while (j < b.size() && b[j].end <= cur.begin) ++j;
    size_t k = j;
    while (k < b.size() && b[k].begin < cur.end) {
      if (b[k].begin > cur.begin) out.push_back({cur.begin, b[k].begin});
      cur.begin = std::max(cur.begin, b[k].end);
      if (cur.begin >= cur.end) break;
      ++k;
    }
    if (cur.begin < cur.end) out.push_back(cur);
  }
  return out;
}

int64_t LengthWithin(const Intervals& disjoint, int64_t begin, int64_t end) {
  auto it = std::lower_bound(disjoint.begin(), disjoint.end(), begin,
                             [](const Interval& i, int64_t t) { return i.end <= t; });
  int64_t n = 0;
  for (; it != disjoint.end() && it->begin < end; ++it)
    n += std::min(it->end, end) - std::max(it->begin, begin);
  return n;
}

}  // namespace trainprof::analysis
