// torch.profiler's event tree turned into an in-process recording, on hand-made trees with exact
// answers.
#include "trace/inprocess/function_events.h"

#include <gtest/gtest.h>

#include <tuple>

namespace trainprof::trace {
namespace {

using torchlib::MemEvent;
using torchlib::OpData;

FunctionEvent Call(std::string name, int64_t b, int64_t e, int64_t cpu = 0, int64_t tid = 1) {
  return {.name = std::move(name), .begin_ns = b, .end_ns = e, .tid = tid, .cpu_net = cpu};
}

// Two steps named as events() names them; in each, linear -> addmm (which begin in the same
// microsecond), and a backward call on another thread.
std::vector<FunctionEvent> TwoSteps() {
  std::vector<FunctionEvent> c;
  for (int s = 0; s < 2; ++s) {
    const int64_t t0 = s * 1000;
    c.push_back(Call("ProfilerStep*", t0, t0 + 900, 100));
    c.push_back(Call("aten::linear", t0 + 10, t0 + 110, 80));
    c.push_back(Call("aten::addmm", t0 + 10, t0 + 100, 64));
    c.push_back(Call("AddmmBackward0", t0 + 200, t0 + 260, -16, 2));
  }
  return c;
}

TEST(FunctionEvents, StepsAreNumberedAndSelfTimesAndDepthsFollowTheTree) {
  StatusOr<OpData> d = OpDataOfFunctionEvents(TwoSteps(), /*first_step=*/3);
  ASSERT_TRUE(d.ok()) << d.status().message();
  ASSERT_EQ(d->ops.size(), 8u);
  EXPECT_EQ(d->names[d->ops[0].name], "ProfilerStep#3");
  EXPECT_EQ(d->names[d->ops[4].name], "ProfilerStep#4");
  EXPECT_EQ(d->ops[0].self_ns, 900 - 100);
  EXPECT_EQ(d->ops[1].depth, 1u);
  // addmm began with linear, at 10 µs: it moves to 1 ns after, so linear's own time is 11 ns.
  EXPECT_EQ(d->ops[2].begin_ns, 11);
  EXPECT_EQ(d->ops[1].self_ns, 100 - 89);
  EXPECT_EQ(d->ops[2].depth, 2u);
  EXPECT_EQ(d->ops[3].step, 3);  // begins inside the step's range, on another thread
  EXPECT_EQ(d->ops[7].step, 4);
}

// Each call's own net bytes (its net less its children's) become one report, at its begin, with
// the device's running total.
TEST(FunctionEvents, OwnBytesBecomeOneReportEachAtTheCallsBegin) {
  StatusOr<OpData> d = OpDataOfFunctionEvents(TwoSteps(), 0);
  ASSERT_TRUE(d.ok());
  // Per step: the step's own +20, linear's own +16, addmm +64 (1 ns after linear, with which it
  // began), the backward -16.
  ASSERT_EQ(d->mem.size(), 8u);
  auto at = [&](size_t i) {
    return std::make_tuple(d->mem[i].t_ns, d->names[d->mem[i].op], d->mem[i].bytes,
                           d->mem[i].total_allocated);
  };
  using T = std::tuple<int64_t, std::string, int64_t, int64_t>;
  EXPECT_EQ(at(0), (T{0, "ProfilerStep#0", 20, 20}));
  EXPECT_EQ(at(1), (T{10, "aten::linear", 16, 36}));
  EXPECT_EQ(at(2), (T{11, "aten::addmm", 64, 100}));
  EXPECT_EQ(at(3), (T{200, "AddmmBackward0", -16, 84}));
  EXPECT_EQ(at(7), (T{1200, "AddmmBackward0", -16, 168}));
  EXPECT_EQ(d->mem[3].tid, 2);
  for (const MemEvent& m : d->mem) {
    EXPECT_EQ(m.device_type, 0);
    EXPECT_EQ(m.ptr, 0u);  // torch gives no address
  }
}

// A call that begins with its caller, one that lasts 0 µs at its caller's end, and siblings that
// touch all nest strictly after the re-timing.
TEST(FunctionEvents, MicrosecondTimesNestStrictly) {
  StatusOr<OpData> d =
      OpDataOfFunctionEvents({Call("aten::zeros", 77000, 85000), Call("aten::empty", 77000, 83000),
                              Call("aten::zero_", 83000, 85000), Call("aten::fill_", 85000, 85000)},
                             0);
  ASSERT_TRUE(d.ok());
  auto span = [&](size_t i) {
    return std::pair(d->ops[i].begin_ns, d->ops[i].begin_ns + d->ops[i].dur_ns);
  };
  EXPECT_EQ(span(0), (std::pair<int64_t, int64_t>{77000, 85003}));
  EXPECT_EQ(span(1), (std::pair<int64_t, int64_t>{77001, 83000}));
  EXPECT_EQ(span(2), (std::pair<int64_t, int64_t>{83001, 85002}));
  EXPECT_EQ(span(3), (std::pair<int64_t, int64_t>{85000, 85001}));
}

// The legacy profiler can end a callee 1 µs after its caller: it stays inside, and the caller
// ends 1 ns after it.
TEST(FunctionEvents, ACalleeEndingAfterItsCallerStaysInside) {
  StatusOr<OpData> d =
      OpDataOfFunctionEvents({Call("aten::max_pool2d", 4420000, 4502000),
                              Call("aten::max_pool2d_with_indices", 4424000, 4503000),
                              Call("aten::relu", 4503000, 4510000)},
                             0);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->ops[0].depth, 0u);
  EXPECT_EQ(d->ops[1].depth, 1u);
  EXPECT_EQ(d->ops[0].begin_ns + d->ops[0].dur_ns, 4503001);
  EXPECT_EQ(d->ops[0].self_ns, 4000 + 1);
  EXPECT_EQ(d->ops[2].depth, 0u);
  EXPECT_EQ(d->ops[2].begin_ns, 4503002);
}

// A callee that ended 1 µs after its caller is closed with it: the next call after the caller
// is their sibling, not the callee's.
TEST(FunctionEvents, ACallAfterItsCallerIsNotInsideItsLateCallee) {
  StatusOr<OpData> d = OpDataOfFunctionEvents(
      {Call("a", 0, 10000), Call("b", 5000, 11000), Call("c", 10000, 15000)}, 0);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->ops[1].depth, 1u);
  EXPECT_EQ(d->ops[2].depth, 0u);
  EXPECT_EQ(d->ops[0].dur_ns, 11001);  // a ends 1 ns after b
}

TEST(FunctionEvents, ACallEndingBeforeItBeginsIsAnErrorNamingIt) {
  StatusOr<OpData> d = OpDataOfFunctionEvents({Call("aten::mm", 10, 0)}, 0);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().message(), "operator call 0 (aten::mm) ends before it begins");
}

}  // namespace
}  // namespace trainprof::trace
