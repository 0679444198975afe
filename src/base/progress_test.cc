#include "base/progress.h"

#include <gtest/gtest.h>

#include <string>

namespace trainprof::base {
namespace {

// The final line names what is counted and its rate; items without a unit read as it/s.
TEST(Progress, LinesNameTheUnitAndTheRate) {
  Progress bytes("lines");
  bytes.Begin("reading 3 trace files", 40, "MiB");
  bytes.Update(40, "");
  testing::internal::CaptureStderr();
  bytes.End();
  const std::string line = testing::internal::GetCapturedStderr();
  EXPECT_EQ(line.rfind("reading 3 trace files 40/40 MiB (100 %), ", 0), 0u) << line;
  EXPECT_NE(line.find(" MiB/s"), std::string::npos) << line;
  EXPECT_EQ(line.find("left"), std::string::npos) << "no time left at the end: " << line;

  Progress items("lines");
  items.Begin("epoch 1/2 train", 300);
  items.Update(300, "");
  testing::internal::CaptureStderr();
  items.End("val loss 0.5");
  const std::string l2 = testing::internal::GetCapturedStderr();
  EXPECT_EQ(l2.rfind("epoch 1/2 train 300/300 (100 %), ", 0), 0u) << l2;
  EXPECT_NE(l2.find(" it/s, val loss 0.5\n"), std::string::npos) << l2;
}

TEST(Progress, OffPrintsNothing) {
  Progress p("off");
  p.Begin("x", 10, "MiB");
  p.Update(5, "");
  testing::internal::CaptureStderr();
  p.End();
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

}  // namespace
}  // namespace trainprof::base
