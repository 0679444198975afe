// A csv-only table's packed rows come back as they went in, in blocks, and its CSV is the same
// as when the rows were held.
#include "report/packed_rows.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "report/csv.h"

namespace trainprof::report {
namespace {

Table Mixed(size_t n) {
  Table t;
  t.id = "mixed";
  t.columns = {{"name", "Name", Unit::kText},
               {"count", "Count", Unit::kCount},
               {"time_s", "Time", Unit::kSeconds},
               {"flag", "Flag", Unit::kText},
               {"gap", "Gap", Unit::kText}};
  for (size_t i = 0; i < n; ++i) {
    t.rows.push_back({std::string(i % 3 == 0 ? "" : "rank " + std::to_string(i)),
                      static_cast<int64_t>(i) - 7, 0.125 * static_cast<double>(i), i % 2 == 0,
                      Value{}});
  }
  return t;
}

std::vector<std::vector<Value>> AllRows(const Table& t) {
  std::vector<std::vector<Value>> all;
  size_t blocks = 0;
  t.ForEachRowBlock([&](const std::vector<std::vector<Value>>& block) {
    ++blocks;
    all.insert(all.end(), block.begin(), block.end());
  });
  EXPECT_EQ(blocks, t.source ? t.source->parts() : 1);
  return all;
}

TEST(PackedRows, GiveBackEveryValueInOrderAcrossBlocks) {
  const size_t n = 2 * kPackedBlockRows + 5;
  Table t = Mixed(n);
  const std::vector<std::vector<Value>> held = t.rows;
  t.KeepInCsvOnly();
  PackRows(t);
  EXPECT_TRUE(t.rows.empty());
  ASSERT_NE(t.source, nullptr);
  EXPECT_EQ(t.source->parts(), 3u);
  EXPECT_EQ(AllRows(t), held);
}

TEST(PackedRows, TheCsvIsTheSameAsFromHeldRows) {
  Table held = Mixed(50);
  held.KeepInCsvOnly();
  Table packed = held;
  PackRows(packed);
  std::ostringstream a, b;
  RenderCsvTable(held, a);
  RenderCsvTable(packed, b);
  EXPECT_EQ(a.str(), b.str());
  EXPECT_NE(a.str().find("rank 4"), std::string::npos);
}

TEST(PackedRows, OnlyACsvOnlyTableIsPacked) {
  Table t = Mixed(3);
  PackRows(t);  // report.json shows its rows: they stay
  EXPECT_EQ(t.rows.size(), 3u);
  EXPECT_EQ(t.source, nullptr);
}

}  // namespace
}  // namespace trainprof::report
