// HTA's launch statistics on hand-made traces whose kernels start a chosen time after their
// launch calls end, so that each figure can be worked out by hand.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analysis/hta/hta.h"
#include "analysis/steps.h"
#include "trace/kineto/kineto_reader.h"

namespace trainprof::analysis {
namespace {

// One step; launch k (2 us long) at 2,000 k + 10 us, its kernel delays_us[k] after it ends.
LaunchStats LaunchStatsOf(const std::vector<int>& delays_us) {
  std::string events = fmt::format(
      R"({{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, )"
      R"("ts": 0, "dur": {}}})",
      2000 * (delays_us.size() + 1));
  for (size_t k = 0; k < delays_us.size(); ++k) {
    const size_t launch = 2000 * k + 10, kernel = launch + 2 + delays_us[k];
    events += fmt::format(
        R"(, {{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, )"
        R"("tid": 1, "ts": {}, "dur": 2, "args": {{"correlation": {}}}}})"
        R"(, {{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": {}, )"
        R"("dur": 1, "args": {{"correlation": {}, "stream": 7, "device": 0}}}})",
        launch, k + 1, kernel, k + 1);
  }
  auto m = trace::ParseTrace("{\"traceEvents\": [" + events + "]}", "launches.json");
  EXPECT_TRUE(m.ok()) << m.status().message();
  if (!m.ok()) return {};
  return ComputeHta(*m, FindSteps(*m, StepsMode::kAll), HtaOptions{}).launch;
}

TEST(CudaKernelLaunchStats, DelaysMedianAndP95InterpolateBetweenRanks) {
  const LaunchStats s = LaunchStatsOf({3, 100, 1, 10, 2});  // out of order on purpose
  EXPECT_EQ(s.launches, 5);
  EXPECT_DOUBLE_EQ(s.mean_delay_ns, 23'200);   // (1 + 2 + 3 + 10 + 100) / 5 us
  EXPECT_DOUBLE_EQ(s.median_delay_ns, 3'000);  // the third of five
  EXPECT_DOUBLE_EQ(s.p95_delay_ns, 82'000);    // rank 3.8: 10 + 0.8 * (100 - 10) us
  EXPECT_DOUBLE_EQ(s.max_delay_ns, 100'000);
  EXPECT_DOUBLE_EQ(s.mean_launch_ns, 2'000);
}

TEST(CudaKernelLaunchStats, QuantilesOfManyShuffledDelays) {
  std::vector<int> delays;  // 1 .. 1,000 us, shuffled (7919 is prime to 1,000)
  for (int k = 0; k < 1000; ++k) delays.push_back(k * 7919 % 1000 + 1);
  const LaunchStats s = LaunchStatsOf(delays);
  EXPECT_EQ(s.launches, 1000);
  EXPECT_DOUBLE_EQ(s.median_delay_ns, 500'500);  // rank 499.5: between 500 and 501 us
  EXPECT_NEAR(s.p95_delay_ns, 950'050, 1e-6);    // rank 949.05: 950 + 0.05 us
  EXPECT_DOUBLE_EQ(s.max_delay_ns, 1'000'000);
}

// A CUDA graph: one cudaGraphLaunch (100 us, a runtime outlier) whose three kernels share its
// correlation id, and one ordinary launch. The graph is one launch, not three, and one outlier.
TEST(CudaKernelLaunchStats, AGraphLaunchCountsOnce) {
  const char* json = R"({"traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0,
     "dur": 1000},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "pid": 1, "tid": 1, "ts": 10,
     "dur": 100, "args": {"correlation": 5}},
    {"ph": "X", "cat": "kernel", "name": "a", "pid": 0, "tid": 7, "ts": 120, "dur": 50,
     "args": {"correlation": 5, "stream": 7, "device": 0}},
    {"ph": "X", "cat": "kernel", "name": "b", "pid": 0, "tid": 7, "ts": 180, "dur": 50,
     "args": {"correlation": 5, "stream": 7, "device": 0}},
    {"ph": "X", "cat": "kernel", "name": "c", "pid": 0, "tid": 7, "ts": 240, "dur": 50,
     "args": {"correlation": 5, "stream": 7, "device": 0}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 300,
     "dur": 5, "args": {"correlation": 6}},
    {"ph": "X", "cat": "kernel", "name": "d", "pid": 0, "tid": 7, "ts": 310, "dur": 50,
     "args": {"correlation": 6, "stream": 7, "device": 0}}]})";
  auto m = trace::ParseTrace(json, "graph.json");
  ASSERT_TRUE(m.ok()) << m.status().message();
  const LaunchStats s = ComputeHta(*m, FindSteps(*m, StepsMode::kAll), HtaOptions{}).launch;
  EXPECT_EQ(s.launches, 2);
  EXPECT_EQ(s.runtime_outliers, 1);
  EXPECT_EQ(s.graph_launches, 1);
  EXPECT_EQ(s.graph_kernels, 3);
  EXPECT_EQ(s.graph_gpu_ns, 150'000);
  EXPECT_EQ(s.gpu_ns, 200'000);
  EXPECT_DOUBLE_EQ(s.max_delay_ns, 10'000);  // the graph: from its call's end to kernel a
}

// Inductor records each Triton launch as a CPU op with a "stream" kwarg. HTA counts any event
// with a stream as GPU work, so --hta-compat does too (a 96 us op around a 1 us kernel: a 96 us
// span); our own selection keeps it on the CPU (the kernel's 1 us).
TEST(HtaCompat, ATritonLaunchOpWithAStreamKwargIsGpuWork) {
  const char* json = R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "triton_poi_fused_add_0", "pid": 1, "tid": 1,
     "ts": 100, "dur": 96, "args": {"kernel_backend": "triton", "stream": 0}},
    {"ph": "X", "cat": "cuda_driver", "name": "cuLaunchKernel", "pid": 1, "tid": 1, "ts": 150,
     "dur": 5, "args": {"correlation": 9}},
    {"ph": "X", "cat": "kernel", "name": "triton_poi_fused_add_0", "pid": 0, "tid": 7,
     "ts": 160, "dur": 1, "args": {"correlation": 9, "stream": 7, "device": 0}}]})";
  auto m = trace::ParseTrace(json, "triton.json");
  ASSERT_TRUE(m.ok()) << m.status().message();
  const StepsResult steps = FindSteps(*m, StepsMode::kAll);
  const HtaResult compat = ComputeHta(*m, steps, HtaOptions{.hta_compat = true});
  EXPECT_EQ(compat.temporal.span_ns, 96'000);
  ASSERT_EQ(compat.idle.size(), 2u);  // streams 0 (the op) and 7 (the kernel)
  const HtaResult ours = ComputeHta(*m, steps, HtaOptions{});
  EXPECT_EQ(ours.temporal.span_ns, 1'000);
}

}  // namespace
}  // namespace trainprof::analysis
