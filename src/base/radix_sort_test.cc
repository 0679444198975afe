#include "base/radix_sort.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>
#include <vector>

namespace trainprof::base {
namespace {

struct Item {
  int64_t key;
  int order;  // its place before sorting
};

// Against std::stable_sort at every size class (the small-input path and the radix path), with
// equal keys, negative keys and keys spanning all 64 bits.
TEST(RadixSort, IsAStableSortByTheKey) {
  std::mt19937_64 rng(11);
  for (size_t n : {size_t{0}, size_t{1}, size_t{500}, size_t{1023}, size_t{1024}, size_t{20000}}) {
    for (uint64_t mask : {uint64_t{0xFF}, uint64_t{0xFFFFFFFFFF}, ~uint64_t{0}}) {
      std::vector<Item> v(n);
      for (size_t i = 0; i < n; ++i)
        v[i] = {static_cast<int64_t>(rng() & mask), static_cast<int>(i)};
      if (n > 2) v[n - 1].key = std::numeric_limits<int64_t>::min(), v[0].key = INT64_MAX;
      std::vector<Item> want = v;
      std::stable_sort(want.begin(), want.end(),
                       [](const Item& a, const Item& b) { return a.key < b.key; });
      RadixSortBy(v, [](const Item& x) { return x.key; });
      ASSERT_EQ(v.size(), want.size());
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(v[i].key, want[i].key) << n << " " << i;
        ASSERT_EQ(v[i].order, want[i].order) << n << " " << i;
      }
    }
  }
}

// From every start, for values below, between, equal to (repeated) and above the keys.
TEST(GallopLowerBound, IsLowerBoundFromAnyStart) {
  const auto less = [](const Item& a, int64_t v) { return a.key < v; };
  for (size_t n : {size_t{0}, size_t{1}, size_t{2}, size_t{37}}) {
    std::vector<Item> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = {static_cast<int64_t>(i / 3 * 2), static_cast<int>(i)};
    for (int64_t value = -1; value <= static_cast<int64_t>(n) + 1; ++value) {
      const size_t want =
          static_cast<size_t>(std::lower_bound(v.begin(), v.end(), value, less) - v.begin());
      for (size_t from = 0; from <= n; ++from)
        ASSERT_EQ(GallopLowerBound(v, from, value, less), want)
            << "n " << n << " value " << value << " from " << from;
    }
  }
}

}  // namespace
}  // namespace trainprof::base
