#include "base/text.h"

#include <gtest/gtest.h>

namespace trainprof::base {
namespace {

TEST(Text, EllipsizeMiddleKeepsTheEndsThatTellNamesApart) {
  EXPECT_EQ(EllipsizeMiddle("short", 28), "short");
  const std::string a = EllipsizeMiddle("fashion-mnist-batch64-20261125T101500Z", 28);
  const std::string b = EllipsizeMiddle("fashion-mnist-batch64-20261125T101900Z", 28);
  EXPECT_EQ(a.size(), 28u);
  EXPECT_NE(a, b);  // Ellipsize() would print both as "fashion-mnist-batch64-202..."
  EXPECT_EQ(a, "fashion-mnist-bat...T101500Z");
  EXPECT_EQ(Ellipsize("fashion-mnist-batch64-20261125T101500Z", 28),
            Ellipsize("fashion-mnist-batch64-20261125T101900Z", 28));
}

}  // namespace
}  // namespace trainprof::base
