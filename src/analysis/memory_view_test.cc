// The Memory view on hand-made TraceModels, with answers worked out by hand from the TensorBoard
// plugin's definitions (docs/trace-analysis.md).
#include "analysis/memory_view.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "memory/roles.h"

namespace trainprof::analysis {
namespace {

using trace::EventKind;
using trace::kNone;

constexpr uint32_t kMain = 0, kOther = 1;

trace::MemoryEvent Mem(int64_t ts, int64_t bytes, uint64_t addr, int64_t total,
                       uint32_t track = kMain, int16_t device = 0) {
  return {.ts_ns = ts,
          .bytes = bytes,
          .total_allocated = total,
          .total_reserved = total == kNone ? kNone : 1000,
          .addr = addr,
          .track = track,
          .device_type = 1,
          .device_id = device};
}

// aten::linear [100, 600) > aten::addmm [150, 500); aten::relu [600, 700) starts where linear
// ends. On GPU 0, 50 bytes were live before the trace (freed at 650 by relu):
//   120 linear   +100 @A  -> 150   (linear's self)
//   200 addmm    +300 @B  -> 450   (addmm's self; linear's total)
//   300 addmm    -100 @A  -> 350   (addmm frees linear's)
//   600 relu     +40  @C  -> 390   (600 is relu's, not linear's: [start, end))
//   650 relu     -50  @Z  -> 340   (a free of memory from before the trace)
//   800 none     -300 @B  ->  40   (inside no op)
//   900 other thread, inside no op: +10 @D -> 50
trace::TraceModel MemoryModel() {
  trace::TraceModel m;
  m.tracks = {{.pid = 1, .tid = 1}, {.pid = 1, .tid = 2}};
  m.Add(EventKind::kCpuOp, "aten::linear", 100, 500, kMain);
  m.Add(EventKind::kCpuOp, "aten::addmm", 150, 350, kMain);
  m.Add(EventKind::kCpuOp, "aten::relu", 600, 100, kMain);
  m.Add(EventKind::kCpuOp, "aten::relu", 1000, 10, kOther);
  m.memory_events = {Mem(120, 100, 0xA, 150),      Mem(200, 300, 0xB, 450),
                     Mem(300, -100, 0xA, 350),     Mem(600, 40, 0xC, 390),
                     Mem(650, -50, 0xF, 340),      Mem(800, -300, 0xB, 40),
                     Mem(900, 10, 0xD, 50, kOther)};
  return m;
}

const OperatorMemory& Op(const MemoryResult& r, const trace::TraceModel& m,
                         const std::string& name) {
  auto it = std::ranges::find_if(r.lists->operators, [&](const OperatorMemory& o) {
    return o.op != trace::kNoName && m.names[o.op] == name;
  });
  EXPECT_NE(it, r.lists->operators.end()) << name;
  static const OperatorMemory kEmpty;
  return it == r.lists->operators.end() ? kEmpty : *it;
}

TEST(MemoryView, CurveAndPeakPerDevice) {
  const trace::TraceModel m = MemoryModel();
  const MemoryResult r = MemoryView(m);
  EXPECT_EQ(r.events, 7);
  ASSERT_EQ(r.devices.size(), 1u);
  const DeviceMemory& d = r.devices[0];
  ASSERT_EQ(d.series->curve.size(), 7u);
  EXPECT_EQ(d.curve_points, 7u);  // known while the curve waits in a scratch file
  EXPECT_EQ(d.series->curve[1].allocated, 450);
  EXPECT_EQ(d.series->curve[1].reserved, 1000);
  EXPECT_EQ(d.peak_allocated, 450);
  EXPECT_EQ(d.peak_ts_ns, 200);
  EXPECT_EQ(d.peak_reserved, 1000);
  // At the peak: linear's 100 @A and addmm's 300 @B; the other 50 came before the trace.
  ASSERT_EQ(d.series->live_at_peak.size(), 2u);
  EXPECT_EQ(m.names[d.series->live_at_peak[0].op], "aten::addmm");
  EXPECT_EQ(d.series->live_at_peak[0].bytes, 300);
  EXPECT_EQ(m.names[d.series->live_at_peak[1].op], "aten::linear");
  EXPECT_EQ(d.series->live_at_peak[1].bytes, 100);
  EXPECT_EQ(d.live_unknown, 50);
}

TEST(MemoryView, OperatorsSelfAndTotal) {
  const trace::TraceModel m = MemoryModel();
  const MemoryResult r = MemoryView(m);
  EXPECT_EQ(r.unattributed, 2);  // 800 and 900
  const OperatorMemory& linear = Op(r, m, "aten::linear");
  EXPECT_EQ(linear.calls, 1);
  EXPECT_EQ(linear.self_count, 1);
  EXPECT_EQ(linear.self_bytes, 100);
  EXPECT_EQ(linear.self_increase, 100);
  EXPECT_EQ(linear.total_count, 2);
  EXPECT_EQ(linear.total_bytes, 400);
  EXPECT_EQ(linear.total_increase, 300);  // +100 +300 -100
  const OperatorMemory& addmm = Op(r, m, "aten::addmm");
  EXPECT_EQ(addmm.self_count, 1);
  EXPECT_EQ(addmm.self_bytes, 300);
  EXPECT_EQ(addmm.self_increase, 200);
  EXPECT_EQ(addmm.total_increase, 200);
  const OperatorMemory& relu = Op(r, m, "aten::relu");
  EXPECT_EQ(relu.calls, 2);
  EXPECT_EQ(relu.self_count, 1);
  EXPECT_EQ(relu.self_bytes, 40);
  EXPECT_EQ(relu.self_increase, -10);
  // By total increase, largest first.
  EXPECT_EQ(m.names[r.lists->operators.front().op], "aten::linear");
}

TEST(MemoryView, AllocationsMatchedByAddress) {
  const trace::TraceModel m = MemoryModel();
  const MemoryResult r = MemoryView(m);
  ASSERT_EQ(r.lists->allocations.size(), 4u);
  EXPECT_EQ(m.names[r.lists->allocations[0].op], "aten::linear");
  EXPECT_EQ(r.lists->allocations[0].bytes, 100);
  EXPECT_EQ(r.lists->allocations[0].alloc_ns, 120);
  EXPECT_EQ(r.lists->allocations[0].free_ns, 300);
  EXPECT_EQ(r.lists->allocations[1].free_ns, 800);    // addmm's @B, freed outside every op
  EXPECT_EQ(r.lists->allocations[2].free_ns, kNone);  // relu's @C: live at the end
  EXPECT_EQ(r.lists->allocations[3].op, trace::kNoName);
  EXPECT_EQ(r.frees_without_alloc, 1);
}

// Traces without Total Allocated: the curve is the running sum; several devices kept apart.
TEST(MemoryView, RunningSumWithoutTotals) {
  trace::TraceModel m;
  m.tracks = {{.pid = 1, .tid = 1}};
  m.memory_events = {Mem(10, 64, 0x1, kNone, kMain, -1), Mem(20, 100, 0x2, kNone),
                     Mem(30, 28, 0x3, kNone), Mem(40, -100, 0x2, kNone)};
  const MemoryResult r = MemoryView(m);
  ASSERT_EQ(r.devices.size(), 2u);
  EXPECT_EQ(r.devices[0].device, -1);
  EXPECT_EQ(r.devices[0].peak_allocated, 64);
  EXPECT_EQ(r.devices[1].device, 0);
  EXPECT_EQ(r.devices[1].peak_allocated, 128);
  EXPECT_EQ(r.devices[1].peak_ts_ns, 30);
  EXPECT_EQ(r.devices[1].series->curve.back().allocated, 28);
  EXPECT_EQ(r.devices[1].peak_reserved, kNone);
  EXPECT_EQ(r.devices[1].live_unknown, 0);
  EXPECT_EQ(r.unattributed, 4);
}

TEST(MemoryView, EmptyWithoutMemoryEvents) {
  trace::TraceModel m;
  m.tracks = {{.pid = 1, .tid = 1}};
  m.Add(EventKind::kCpuOp, "aten::mm", 0, 10, kMain);
  const MemoryResult r = MemoryView(m);
  EXPECT_EQ(r.events, 0);
  EXPECT_TRUE(r.devices.empty());
  EXPECT_TRUE(r.lists->operators.empty());
}

}  // namespace
}  // namespace trainprof::analysis

namespace trainprof::analysis {
namespace {

// A forward (linear), a backward op on autograd's evaluate_function, an AdamW step; 50 bytes
// were live before the trace (the weights). At the peak (118 bytes, at 520): the weights, the
// gradient made in the backward, the state made in the step, and the step's temporary.
trace::TraceModel StepModel() {
  trace::TraceModel m;
  m.tracks = {{.pid = 1, .tid = 1}};
  m.Add(EventKind::kCpuOp, "aten::linear", 100, 100, kMain);
  m.Add(EventKind::kCpuOp, "autograd::engine::evaluate_function: AddmmBackward0", 300, 100, kMain);
  m.Add(EventKind::kCpuOp, "Optimizer.step#AdamW.step", 500, 100, kMain);
  m.memory_events = {Mem(110, 10, 0xA, 60), Mem(120, 5, 0xB, 65),   Mem(130, -5, 0xB, 60),
                     Mem(310, 20, 0xC, 80), Mem(320, -10, 0xA, 70), Mem(510, 40, 0xD, 110),
                     Mem(520, 8, 0xE, 118), Mem(530, -8, 0xE, 110)};
  return m;
}

TEST(MemoryRolesOfATrace, TheOptimizerAndAutogradOpsTellTheRoles) {
  const trace::TraceModel m = StepModel();
  const MemoryResult r = MemoryView(m);
  ASSERT_EQ(r.devices.size(), 1u);
  const DeviceMemory& d = r.devices[0];
  EXPECT_EQ(d.peak_allocated, 118);
  ASSERT_EQ(d.series->role_bytes.size(), static_cast<size_t>(memory::kRoles));
  auto at = [&](memory::Role role) { return d.series->role_bytes[static_cast<size_t>(role)]; };
  EXPECT_EQ(at(memory::Role::kParameter), 50);
  EXPECT_EQ(at(memory::Role::kGradient), 20);
  EXPECT_EQ(at(memory::Role::kOptimizerState), 40);
  EXPECT_EQ(at(memory::Role::kTemporary), 8);
  EXPECT_EQ(at(memory::Role::kUnknown), 0);
  EXPECT_EQ(d.series->rule_bytes[memory::kOptimizerKept], 40);
  // The live-at-peak table still names the allocating ops, and the weights as before the trace.
  EXPECT_EQ(d.live_unknown, 50);
  // The timeline by role: a point an event (8 here), in the trace's clock; its highest point is
  // the peak, and the weights made before the trace are in every point.
  ASSERT_EQ(d.series->role_timeline.size(), 8u);
  EXPECT_EQ(d.role_points, 8u);
  EXPECT_EQ(d.series->role_timeline.front().time, 110);
  int64_t highest = 0;
  for (const memory::RolePoint& p : d.series->role_timeline) {
    int64_t sum = 0;
    for (int64_t b : p.bytes) sum += b;
    highest = std::max(highest, sum);
    EXPECT_EQ(p.bytes[static_cast<size_t>(memory::Role::kParameter)], 50) << p.time;
  }
  EXPECT_EQ(highest, 118);
}

}  // namespace
}  // namespace trainprof::analysis
