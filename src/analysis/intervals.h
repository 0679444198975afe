// Half-open time intervals [begin, end) in nanoseconds and the set operations the analyses need:
// union of overlapping intervals, total length, intersection and difference of two unions.
//
//   Intervals k = Union({{0, 10}, {5, 20}, {30, 40}});   // {[0,20), [30,40)}
//   int64_t busy = Length(k);                             // 30
//   Intervals idle = Subtract({{0, 50}}, k);              // {[20,30), [40,50)}
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace trainprof::analysis {

struct Interval {
  int64_t begin = 0;
  int64_t end = 0;
  bool operator==(const Interval&) const = default;
};
using Intervals = std::vector<Interval>;  // sorted, disjoint after Union()

// Sorts and merges overlapping or touching intervals; empty ones are dropped.
Intervals Union(Intervals v);
// Appends `i` to intervals bound for Union, merged into the last one when it starts inside it:
// the union is the same, and events in time order then take one entry per busy stretch, not
// one each (a 1 GB trace's cpu_ops were 50 MB of intervals).
inline void AppendForUnion(Intervals& v, Interval i) {
  if (!v.empty() && i.begin >= v.back().begin && i.begin <= v.back().end)
    v.back().end = std::max(v.back().end, i.end);
  else
    v.push_back(i);
}
int64_t Length(const Intervals& disjoint);
// Both arguments sorted and disjoint.
Intervals Intersect(const Intervals& a, const Intervals& b);
Intervals Subtract(const Intervals& a, const Intervals& b);
// Length of the part of `disjoint` inside [begin, end).
int64_t LengthWithin(const Intervals& disjoint, int64_t begin, int64_t end);
// The part of `disjoint` inside [begin, end), each interval clipped to it; found by binary search.
Intervals Within(const Intervals& disjoint, int64_t begin, int64_t end);
// The same three into *out (cleared first; `out` is neither input): a caller in a loop keeps one
// buffer instead of allocating each time (the idle causes' gaps were half of analyze's mallocs).
void IntersectInto(const Intervals& a, const Intervals& b, Intervals* out);
void SubtractInto(const Intervals& a, const Intervals& b, Intervals* out);
void WithinInto(const Intervals& disjoint, int64_t begin, int64_t end, Intervals* out);

}  // namespace trainprof::analysis
