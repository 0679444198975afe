#include "base/box.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

namespace trainprof::base {
namespace {

struct Lists {
  std::vector<int> rows;
};

TEST(Box, HoldsAValueMadeByItsDefaultConstructorAndCopiesIt) {
  Box<Lists> b;
  ASSERT_TRUE(b);
  b->rows.push_back(7);
  Box<Lists> copy = b;
  copy->rows.push_back(8);
  EXPECT_EQ(b->rows, std::vector<int>{7});
  EXPECT_EQ(copy->rows, (std::vector<int>{7, 8}));
}

TEST(Box, ALetGoValueReadsAsADefaultOneThroughAConstPath) {
  Box<Lists> b;
  b->rows.push_back(7);
  b.reset();
  EXPECT_FALSE(b);
  EXPECT_TRUE(std::as_const(b)->rows.empty());
  const Box<Lists> copy = b;  // a copy of nothing is nothing
  EXPECT_FALSE(copy);
  b.emplace().rows.push_back(9);
  EXPECT_EQ(std::as_const(b)->rows, std::vector<int>{9});
}

TEST(BoxDeathTest, WritingToALetGoValueAborts) {
  Box<Lists> b(nullptr);
  EXPECT_DEATH(b->rows.push_back(1), "");
}

}  // namespace
}  // namespace trainprof::base
