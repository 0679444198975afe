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

// hipBLASLt kernels that differ only in the middle: cut at the end (or the middle) they print the
// same; cut apart, each keeps its tile size.
TEST(Text, EllipsizeApartKeepsThePartThatDiffers) {
  const std::string start = "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_GSU1_GSUAMB_LBSPP0_PGR2_";
  const std::string end =
      "_SN_LDSB1_AFC1_AFEM1_AFEM1_ASEM1_CLR1_CADS0_DTVA0_DTVB0_EPS0_FDSI0_GRPM1_"
      "GRVWA8_GRVWB8_GSUAMB_GLS0_ISA942_IU1_K1_LBSPPA128_LBSPPB128_LBSPPM0";
  const std::vector<std::string> names = {start + "MT256x192x64_MI16x16x1" + end,
                                          start + "MT128x128x64_MI16x16x1" + end,
                                          start + "MT256x256x64_MI32x32x1" + end, "short_kernel"};
  const std::vector<std::string> cut = EllipsizeApart(names, 90);
  ASSERT_EQ(cut.size(), 4u);
  EXPECT_EQ(cut[3], "short_kernel");
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_LE(cut[i].size(), 90u) << cut[i];
    EXPECT_TRUE(cut[i].starts_with("Cijk_Alik_Bljk_BBS_BH")) << cut[i];
    for (size_t j = 0; j < i; ++j) EXPECT_NE(cut[i], cut[j]);
  }
  EXPECT_NE(cut[0].find("MT256x192x64_MI16x16x1"), std::string::npos) << cut[0];
  EXPECT_NE(cut[1].find("MT128x128x64"), std::string::npos) << cut[1];
  // Names that differ at their end keep the middle cut, as EllipsizeMiddle.
  const std::vector<std::string> runs = {"fashion-mnist-batch64-20261125T101500Z",
                                         "fashion-mnist-batch64-20261125T101900Z"};
  EXPECT_EQ(EllipsizeApart(runs, 28)[0], EllipsizeMiddle(runs[0], 28));
  EXPECT_EQ(EllipsizeApart(names, 90)[0].size(), 90u);
  // Cut in the middle, as before, the first two print the same.
  EXPECT_EQ(EllipsizeMiddle(names[0], 90), EllipsizeMiddle(names[1], 90));
}

}  // namespace
}  // namespace trainprof::base
