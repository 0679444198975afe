#include "base/progress.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace trainprof::base {
namespace {

// What End() prints after Begin(label, total, unit) and an Update to the total.
std::string FinalLine(const std::string& mode, const std::string& label, int64_t total,
                      const std::string& unit, std::string_view extra = "") {
  Progress p(mode);
  p.Begin(label, total, unit);
  p.Update(total, "");
  testing::internal::CaptureStderr();
  p.End(extra);
  return testing::internal::GetCapturedStderr();
}

// The final line names what is counted and its rate; items without a unit read as it/s.
TEST(Progress, LinesNameTheUnitAndTheRate) {
  const std::string line = FinalLine("lines", "reading 3 trace files", 40, "MiB");
  EXPECT_EQ(line.rfind("reading 3 trace files 40/40 MiB (100 %), ", 0), 0u) << line;
  EXPECT_NE(line.find(" MiB/s"), std::string::npos) << line;
  EXPECT_EQ(line.find("left"), std::string::npos) << "no time left at the end: " << line;

  const std::string l2 = FinalLine("lines", "epoch 1/2 train", 300, "", "val loss 0.5");
  EXPECT_EQ(l2.rfind("epoch 1/2 train 300/300 (100 %), ", 0), 0u) << l2;
  EXPECT_NE(l2.find(" it/s, val loss 0.5\n"), std::string::npos) << l2;
}

TEST(Progress, OffPrintsNothing) { EXPECT_EQ(FinalLine("off", "x", 10, "MiB"), ""); }

}  // namespace
}  // namespace trainprof::base
