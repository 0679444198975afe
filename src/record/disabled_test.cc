// With TRAINPROF_ENABLE=0 (-DTRAINPROF_ENABLE=OFF) every macro is empty and Profiled() returns
// the callable itself: nothing is recorded even while a session records.
#undef TRAINPROF_ENABLE
#define TRAINPROF_ENABLE 0
#include <gtest/gtest.h>

#include <type_traits>

#include "record/recorder.h"
#include "trainprof/scope.h"

namespace trainprof::record {
namespace {

TEST(Disabled, MacrosRecordNothingAndProfiledIsTheCallable) {
  auto epoch = BeginEpoch(64);
  ASSERT_TRUE(epoch.ok());
  SetThreadName("disabled-test");
  SetRecording(true);
  auto add = [](int a, int b) { return a + b; };
  auto wrapped = Profiled("[Math].add", add);
  static_assert(std::is_same_v<decltype(wrapped), decltype(add)>);
  EXPECT_EQ(wrapped(1, 2), 3);
  {
    TRAINPROF_SCOPE("disabled");
    TRAINPROF_SCOPE_KIND("disabled_kind", ActionKind::kForward);
  }
  SetRecording(false);
  auto threads = Collect(*epoch);
  EndEpoch(*epoch);
  for (const ThreadEvents& t : threads) EXPECT_NE(t.name, "disabled-test");
}

}  // namespace
}  // namespace trainprof::record
