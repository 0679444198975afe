// HTA's fold into "others" on four names whose sums (50, 30, 15 and 5) make each quantile easy to
// work out by hand: the running sums are 50, 80, 95 and 100.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "analysis/hta/hta.h"

namespace trainprof::analysis {
namespace {

std::vector<KernelStats> FourNames() {
  std::vector<KernelStats> rows;
  for (auto [name, sum] : {std::pair{"c", 15}, {"a", 50}, {"d", 5}, {"b", 30}})
    rows.push_back({.name = name,
                    .count = 5,
                    .sum_ns = sum,
                    .min_ns = 1,
                    .max_ns = sum / 2,
                    .std_ns = std::numeric_limits<double>::quiet_NaN()});
  return rows;
}

std::vector<std::string> Names(const std::vector<KernelStats>& rows) {
  std::vector<std::string> out;
  for (const KernelStats& r : rows) out.push_back(r.name);
  return out;
}

TEST(HtaFold, AtMostTopNamesComeBackSortedByTimeWithTheirOwnStatistics) {
  const auto rows = HtaFold(FourNames(), {.top = 4});
  EXPECT_EQ(Names(rows), (std::vector<std::string>{"a", "b", "c", "d"}));
  EXPECT_EQ(rows[0].max_ns, 25);  // its instances' max, not its sum
  EXPECT_DOUBLE_EQ(rows[0].mean_ns, 10.0);
  EXPECT_EQ(rows[0].std_ns, 0);  // pandas' NaN for one instance, filled as HTA fills it
}

TEST(HtaFold, NamesPastTheQuantileOfTheRunningSumsFold) {
  // 0.8 of the three steps between four running sums: 95 + 0.4 x 5 = 97, so only "d" (100).
  auto rows = HtaFold(FourNames(), {.top = 3});
  EXPECT_EQ(Names(rows), (std::vector<std::string>{"a", "b", "c", "others"}));
  EXPECT_EQ(rows[3].sum_ns, 5);
  EXPECT_EQ(rows[0].max_ns, 50);  // a kept name's max is its sum
  // 0.5: 80 + 0.5 x 15 = 87.5, so "c" (95) and "d" fold.
  rows = HtaFold(FourNames(), {.top = 3, .duration_ratio = 0.5});
  EXPECT_EQ(Names(rows), (std::vector<std::string>{"a", "b", "others"}));
  EXPECT_EQ(rows[2].sum_ns, 20);
  EXPECT_EQ(rows[2].count, 10);
  EXPECT_EQ(rows[2].max_ns, 15);
  EXPECT_EQ(rows[2].min_ns, 5);
}

TEST(HtaFold, OthersStatisticsAreOverThePerNameSums) {
  const auto rows = HtaFold(FourNames(), {.top = 1});
  ASSERT_EQ(Names(rows), (std::vector<std::string>{"a", "others"}));
  const double mean = (30.0 + 15 + 5) / 3;
  const double var = (std::pow(30 - mean, 2) + std::pow(15 - mean, 2) + std::pow(5 - mean, 2)) / 2;
  EXPECT_DOUBLE_EQ(rows[1].mean_ns, mean);
  EXPECT_DOUBLE_EQ(rows[1].std_ns, std::sqrt(var));
}

TEST(HtaFold, AllowedNamesNeverFold) {
  const auto rows = HtaFold(FourNames(), {.top = 1, .allowlist = {"x", "d"}});
  EXPECT_EQ(Names(rows), (std::vector<std::string>{"a", "d", "others"}));
  EXPECT_EQ(rows[2].sum_ns, 45);
}

}  // namespace
}  // namespace trainprof::analysis
