// torch.profiler's event tree turned into operator calls, on hand-made trees with exact answers.
#include "operators/op_tree.h"

#include <gtest/gtest.h>

#include "operators/operator_report.h"

namespace trainprof::torchlib {
namespace {

TreeOp Call(std::string name, int64_t b, int64_t e, int64_t parent, int64_t cpu = 0,
            int64_t kernels = 0, int64_t tid = 1) {
  TreeOp c;
  c.name = std::move(name);
  c.begin_ns = b;
  c.end_ns = e;
  c.parent = parent;
  c.cpu_net = cpu;
  c.kernels_ns = kernels;
  c.tid = tid;
  return c;
}

// Two steps named as events() names them; in each, linear -> addmm (launching a 30 ns kernel)
// and a backward call on another thread.
std::vector<TreeOp> TwoSteps() {
  std::vector<TreeOp> c;
  for (int s = 0; s < 2; ++s) {
    const int64_t t0 = s * 1000;
    const auto step = static_cast<int64_t>(c.size());
    c.push_back(Call("ProfilerStep*", t0, t0 + 900, -1, 100));
    c.push_back(Call("aten::linear", t0 + 10, t0 + 110, step, 64));
    c.push_back(Call("aten::addmm", t0 + 20, t0 + 100, step + 1, 64, 30));
    c.push_back(Call("AddmmBackward0", t0 + 200, t0 + 260, -1, -16, 50, 2));
  }
  return c;
}

TEST(OpTree, SelfTimesDepthsStepsAndDeviceTotals) {
  StatusOr<OpData> d = OpDataFromTree(TwoSteps(), /*first_step=*/3);
  ASSERT_TRUE(d.ok()) << d.status().message();
  ASSERT_EQ(d->ops.size(), 8u);
  const OpEvent& step = d->ops[0];
  EXPECT_EQ(d->names[step.name], "ProfilerStep*");
  EXPECT_EQ(step.step, 3);
  EXPECT_EQ(step.self_ns, 900 - 100);
  EXPECT_EQ(step.device_ns, 30);  // its grandchild's kernel
  EXPECT_EQ(step.self_device_ns, 0);
  EXPECT_EQ(step.self_alloc[kCpu], 100 - 64);
  const OpEvent& linear = d->ops[1];
  EXPECT_EQ(linear.depth, 1u);
  EXPECT_EQ(linear.self_ns, 100 - 80);
  EXPECT_EQ(linear.self_alloc[kCpu] + linear.self_freed[kCpu], 0);
  const OpEvent& addmm = d->ops[2];
  EXPECT_EQ(addmm.depth, 2u);
  EXPECT_EQ(addmm.self_device_ns, 30);
  EXPECT_EQ(addmm.self_alloc[kCpu], 64);
  const OpEvent& backward = d->ops[3];
  EXPECT_EQ(backward.step, 3);  // begins inside the step's range, on another thread
  EXPECT_EQ(backward.self_freed[kCpu], 16);
  EXPECT_EQ(d->ops[4].step, 4);

  std::vector<OpRow> rows = AggregateOps(*d, {3, 5}, false);
  SortOps(rows, SortKey::kSelfCudaTimeTotal);
  EXPECT_EQ(rows[0].name, "AddmmBackward0");
  EXPECT_DOUBLE_EQ(rows[0].self_device_s, 100e-9);
  EXPECT_EQ(rows[1].name, "aten::addmm");
  EXPECT_DOUBLE_EQ(rows[1].device_total_s, 60e-9);
}

TEST(OpTree, NumberedStepsKeepTheirNumbersAndOutsidersCountInTheFirst) {
  std::vector<TreeOp> c = {Call("ProfilerStep#7", 0, 100, -1), Call("aten::mm", 10, 20, 0),
                           Call("aten::mm", 150, 160, -1)};
  StatusOr<OpData> d = OpDataFromTree(c, 6);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->ops[1].step, 7);
  EXPECT_EQ(d->ops[2].step, 6);  // outside every step: the first recorded one
}

TEST(OpTree, BadParentsAndTimesAreErrorsNamingTheCall) {
  StatusOr<OpData> d = OpDataFromTree({Call("aten::mm", 0, 10, 5)}, 0);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("operator call 0 (aten::mm) has parent 5"),
            std::string::npos);
  d = OpDataFromTree({Call("aten::mm", 10, 0, -1)}, 0);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("ends before it begins"), std::string::npos);
}

TEST(OpTree, TheTableShowsCudaColumnsOnlyWithDeviceTime) {
  StatusOr<OpData> d = OpDataFromTree(TwoSteps(), 0);
  ASSERT_TRUE(d.ok());
  Options::Memory o;
  o.steps = 2;
  OperatorReportInput in{*d, {0, 2}, o, 2};
  in.gross_memory = false;
  report::Report r;
  AddOperatorSection(in, r);
  const report::Section* s = r.FindSection("operators");
  ASSERT_NE(s, nullptr);
  const report::Table* t = s->FindTable("operators");
  ASSERT_NE(t, nullptr);
  std::vector<std::string> ids;
  for (const report::Column& c : t->columns) ids.push_back(c.key);
  EXPECT_NE(std::find(ids.begin(), ids.end(), "self_cuda_s"), ids.end());
  EXPECT_EQ(std::find(ids.begin(), ids.end(), "self_cpu_mem_allocated"), ids.end());
  ASSERT_NE(s->FindMetric("self_cuda_time_total_s"), nullptr);
  EXPECT_DOUBLE_EQ(std::get<double>(s->FindMetric("self_cuda_time_total_s")->value), 160e-9);

  d->ops.erase(d->ops.begin() + 2);  // no kernels left but the backward's
  for (OpEvent& e : d->ops) e.self_device_ns = e.device_ns = 0;
  report::Report cpu;
  AddOperatorSection(in, cpu);
  for (const report::Column& c : cpu.FindSection("operators")->FindTable("operators")->columns)
    EXPECT_NE(c.key, "self_cuda_s");
}

}  // namespace
}  // namespace trainprof::torchlib
