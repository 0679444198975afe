// Activation memory per step from the observer's recording, on hand-made events.
#include "operators/activation_steps.h"

#include <gtest/gtest.h>

namespace trainprof::torchlib {
namespace {

MemEvent Mem(int64_t t, int64_t step, uint64_t ptr, int64_t bytes) {
  MemEvent m;
  m.t_ns = t;
  m.step = step;
  m.ptr = ptr;
  m.bytes = bytes;
  return m;
}

OpEvent Backward(int64_t step, int64_t begin) {
  OpEvent e;
  e.step = step;
  e.begin_ns = begin;
  e.dur_ns = 30;
  e.backward = true;
  return e;
}

TEST(ActivationSteps, CountTheStepsBlocksStillLiveWhenItsBackwardBegins) {
  OpData d;
  d.mem = {Mem(5, 0, 0x9, 70),     // warm-up step 0: known, never counted
           Mem(10, 1, 0xa, 100),   // input, step 1
           Mem(20, 1, 0xb, 400),   // saved for backward
           Mem(30, 1, 0xc, 50),    // temporary
           Mem(40, 1, 0xc, -50),   //
           Mem(60, 1, 0xd, 300),   // gradient during backward
           Mem(70, 1, 0xb, -400),  //
           Mem(80, 2, 0xe, 100),   // step 2 has no backward
           Mem(90, 3, 0xf, 8)};    // step 3 is not recorded
  d.ops = {Backward(0, 6), Backward(1, 50), Backward(3, 95)};
  const std::vector<StepActivation> a = StepActivations(d, {1, 3});
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].step, 1);
  EXPECT_EQ(a[0].device_class, kCpu);
  EXPECT_EQ(a[0].bytes, 500);  // input + saved output; the temporary was freed
}

TEST(ActivationSteps, DeviceNames) {
  EXPECT_EQ(DeviceName(0, -1), "cpu");
  EXPECT_EQ(DeviceName(1, 0), "cuda:0");
  EXPECT_EQ(DeviceName(1, -1), "cuda");
  EXPECT_EQ(DeviceName(8, 2), "device8:2");
}

}  // namespace
}  // namespace trainprof::torchlib
