#include <gtest/gtest.h>

#include <filesystem>

#include "analysis/overview.h"
#include "analysis/steps.h"
#include "gpu/gpu_trace.h"
#include "trace/inprocess/activity.h"
#include "trace/kineto/kineto_reader.h"
#include "util/golden.h"

namespace trainprof::gpu {
namespace {

DeviceActivity Work(ActivityKind kind, uint32_t correlation, int64_t begin, int64_t end) {
  DeviceActivity a;
  a.kind = kind, a.correlation = correlation, a.begin_ns = begin, a.end_ns = end;
  a.stream = 7;
  return a;
}

// A step of 1 ms on the CPU thread; two kernels of 200 and 300 us and a 100 us copy, each
// launched from the thread, on device 0's stream 7. Written as trainprof writes its trace.json,
// then read back as `trainprof analyze` reads any Kineto trace.
session::TraceInput OneGpuStep() {
  session::TraceInput t;
  t.process_name = "job";
  t.pid = 4242;
  t.steps.push_back({.profiler_step = 3, .begin_ns = 0, .end_ns = 1'000'000, .tid = 1});
  ActivityData a;
  a.names = {"cudaLaunchKernel", "cudaMemcpyAsync", "void gemm<float>()", "relu_kernel"};
  auto kernel = [](uint32_t name, uint32_t corr, int64_t b, int64_t e) {
    DeviceActivity k = Work(ActivityKind::kKernel, corr, b, e);
    k.name = name;
    k.grid[0] = 264, k.grid[1] = 1, k.grid[2] = 1;
    k.block[0] = 128, k.block[1] = 1, k.block[2] = 1;
    return k;
  };
  DeviceActivity copy = Work(ActivityKind::kMemcpy, 3, 700'000, 800'000);
  copy.name = 1, copy.bytes = 1 << 20, copy.copy = CopyKind::kHtoD;
  a.device = {kernel(2, 1, 100'000, 300'000), kernel(3, 2, 300'000, 600'000), copy};
  a.api = {{.name = 0, .tid = 1, .begin_ns = 10'000, .end_ns = 20'000, .correlation = 1},
           {.name = 0, .tid = 1, .begin_ns = 30'000, .end_ns = 40'000, .correlation = 2},
           {.name = 1, .tid = 1, .begin_ns = 50'000, .end_ns = 60'000, .correlation = 3}};
  a.devices = {{.id = 0,
                .name = "NVIDIA H100 80GB HBM3",
                .total_memory = 85'000'000'000,
                .major = 9,
                .minor = 0,
                .sms = 132,
                .max_threads_per_sm = 2048}};
  AddGpuTrace(a, t);
  return t;
}

TEST(GpuTrace, AnalyzeReadsTheKernelsOfTrainprofsOwnTrace) {
  const std::string path = testutil::FreshTempDir() + "/trace.json";
  ASSERT_TRUE(session::WriteTrace(OneGpuStep(), path).ok());
  StatusOr<trace::TraceModel> m = trace::ReadTraceFile(path, {});
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m->devices.size(), 1u);
  EXPECT_EQ(m->devices[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(m->devices[0].compute_major, 9);
  EXPECT_EQ(m->devices[0].num_sms, 132);
  int kernels = 0;
  for (size_t i = 0; i < m->size(); ++i) {
    if (m->kind[i] != trace::EventKind::kKernel) continue;
    ++kernels;
    ASSERT_GE(m->launcher[i], 0) << "kernel " << m->name_of(i) << " has no launching call";
    EXPECT_EQ(m->name_of(static_cast<size_t>(m->launcher[i])), "cudaLaunchKernel");
  }
  EXPECT_EQ(kernels, 2);
  ASSERT_EQ(m->kernel_stats.size(), 2u);
  EXPECT_FLOAT_EQ(m->kernel_stats[0].blocks_per_sm, 2.0f);  // 264 blocks on 132 SMs

  analysis::StepsResult steps = analysis::FindSteps(*m, analysis::StepsMode::kAll);
  ASSERT_EQ(steps.steps.size(), 1u);
  EXPECT_TRUE(steps.has_gpu);
  analysis::Overview o = analysis::ComputeOverview(*m, steps);
  EXPECT_EQ(o.steps[0].total_ns, 1'000'000);
  EXPECT_EQ(o.steps[0].ns[analysis::kKernel], 500'000);
  EXPECT_EQ(o.steps[0].ns[analysis::kMemcpy], 100'000);
}

TEST(GpuTrace, DevicePropertiesAreEmptyWithoutDevices) { EXPECT_EQ(DevicePropertiesJson({}), ""); }

}  // namespace
}  // namespace trainprof::gpu
