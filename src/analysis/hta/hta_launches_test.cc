// HTA's per-launch rows on a hand-made trace: which GPU events get a row, their durations and
// clipped delays, and their order (the launch calls' order in the file, as HTA's merge).
#include "analysis/hta/hta_launches.h"

#include <gtest/gtest.h>

#include "analysis/steps.h"
#include "trace/kineto/kineto_reader.h"

namespace trainprof::analysis {
namespace {

// Thread 2's launch (correlation 3) is written after thread 1's two, though it starts first;
// a memset launch counts, a cudaEventRecord does not; the second kernel starts before its
// launch call ends (delay clipped to 0).
constexpr const char* kTrace = R"json({"traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 1000},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 100, "dur": 5, "args": {"correlation": 1}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemsetAsync", "pid": 1, "tid": 1, "ts": 200, "dur": 8, "args": {"correlation": 2}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaEventRecord", "pid": 1, "tid": 1, "ts": 300, "dur": 2, "args": {"correlation": 4}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 2, "ts": 50, "dur": 4, "args": {"correlation": 3}},
  {"ph": "X", "cat": "kernel", "name": "k1", "pid": 0, "tid": 7, "ts": 110, "dur": 30, "args": {"correlation": 1, "stream": 7, "device": 0}},
  {"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": 0, "tid": 7, "ts": 205, "dur": 2, "args": {"correlation": 2, "stream": 7, "device": 0}},
  {"ph": "X", "cat": "kernel", "name": "k3", "pid": 0, "tid": 8, "ts": 60, "dur": 10, "args": {"correlation": 3, "stream": 8, "device": 0}}
]})json";

TEST(CudaKernelLaunches, OneRowPerLaunchedEventInTheCallsFileOrder) {
  auto m = trace::ParseTrace(kTrace, "launches.json");
  ASSERT_TRUE(m.ok()) << m.status().message();
  const StepsResult steps = FindSteps(*m, StepsMode::kAll);
  const std::vector<KernelLaunch> rows = CudaKernelLaunches(*m, steps, HtaOptions{});
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].correlation, 1);
  EXPECT_EQ(rows[0].cpu_ns, 5'000);
  EXPECT_EQ(rows[0].gpu_ns, 30'000);
  EXPECT_EQ(rows[0].delay_ns, 5'000);  // 110 - (100 + 5)
  EXPECT_EQ(rows[1].correlation, 2);   // the memset: HTA counts memory launches too
  EXPECT_EQ(rows[1].gpu_ns, 2'000);
  EXPECT_EQ(rows[1].delay_ns, 0);      // starts 3 us before its call ends: clipped
  EXPECT_EQ(rows[2].correlation, 3);   // thread 2's call, written last
  EXPECT_EQ(rows[2].delay_ns, 6'000);  // 60 - (50 + 4)
}

TEST(CudaKernelLaunches, CompatDropsTheLastStepOnlyWithTwoStepNames) {
  auto m = trace::ParseTrace(kTrace, "launches.json");
  ASSERT_TRUE(m.ok()) << m.status().message();
  HtaOptions compat;
  compat.hta_compat = true;
  EXPECT_FALSE(RankHtaOptions(*m, compat).compat_drop_last_step);       // one ProfilerStep name
  EXPECT_TRUE(RankHtaOptions(*m, HtaOptions{}).compat_drop_last_step);  // untouched default
}

}  // namespace
}  // namespace trainprof::analysis
