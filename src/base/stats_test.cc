#include "base/stats.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace trainprof::base {
namespace {

TEST(Stats, MedianOfOddAndEvenCounts) {
  EXPECT_EQ(Median({3, 1, 2}), 2);
  EXPECT_EQ(Median({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(Median({7}), 7);
}

TEST(Stats, EmptyInputIsNoValueEverywhere) {
  std::vector<double> none;
  EXPECT_TRUE(std::isnan(Median({})));
  EXPECT_TRUE(std::isnan(Quantile(none, 0.5)));
  EXPECT_TRUE(std::isnan(QuantileOfSorted(std::vector<int64_t>{}, 0.95)));
}

TEST(Stats, QuantileInterpolatesLikeNumpy) {
  std::vector<double> v = {4, 1, 3, 2};
  EXPECT_DOUBLE_EQ(Quantile(v, 0.9), 3.7);  // numpy.quantile([1,2,3,4], 0.9)
  EXPECT_DOUBLE_EQ(Quantile(v, 0), 1);
  EXPECT_DOUBLE_EQ(Quantile(v, 1), 4);
  EXPECT_DOUBLE_EQ(QuantileOfSorted(std::vector<int64_t>{10, 20, 30, 40}, 0.5), 25);
  EXPECT_DOUBLE_EQ(QuantileOfSorted(std::vector<int64_t>{5}, 0.95), 5);
}

TEST(Stats, QuantileAgreesWithTheSortedForm) {
  std::vector<double> v;
  for (int i = 0; i < 101; ++i) v.push_back(static_cast<double>((i * 37) % 101));
  std::vector<double> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  for (double q : {0.0, 0.1, 0.25, 0.5, 0.95, 0.999, 1.0}) {
    std::vector<double> w = v;
    EXPECT_EQ(Quantile(w, q), QuantileOfSorted(sorted, q)) << q;
  }
}

}  // namespace
}  // namespace trainprof::base
