#include "analysis/steps.h"

#include <gtest/gtest.h>

#include "trace/kineto/kineto_reader.h"

namespace trainprof::analysis {
namespace {

trace::TraceModel Read(const char* json) {
  auto m = trace::ParseTrace(json, "t.json");
  EXPECT_TRUE(m.ok()) << m.status().message();
  return std::move(*m);
}

// An inference trace: host work from t = 0, GPU work from 100 to 300 µs; no ProfilerStep. The
// window is the GPU's busy span, not the host's, so a busy GPU reads as busy.
TEST(Steps, WithoutProfilerStepsTheWindowIsTheGpuSpan) {
  const trace::TraceModel m = Read(R"J({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 90},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 80,
     "dur": 5, "args": {"correlation": 7}},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 100, "dur": 150,
     "args": {"correlation": 7, "device": 0, "stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "k2", "pid": 0, "tid": 7, "ts": 260, "dur": 40,
     "args": {"device": 0, "stream": 7}}]})J");
  const StepsResult s = FindSteps(m, StepsMode::kComplete);
  ASSERT_EQ(s.steps.size(), 1u);
  EXPECT_TRUE(s.synthetic);
  EXPECT_TRUE(s.gpu_window);
  EXPECT_EQ(s.steps[0].begin_ns, 100'000);
  EXPECT_EQ(s.steps[0].end_ns, 300'000);
  EXPECT_EQ(s.steps[0].launches, 1);
}

// GPU events only (a ROCm GPU-only trace): analysed, over the GPU's span.
TEST(Steps, GpuOnlyTraceHasAWindow) {
  const trace::TraceModel m = Read(R"J({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 5,
     "args": {"device": 0, "stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 20, "dur": 5,
     "args": {"device": 0, "stream": 7}}]})J");
  const StepsResult s = FindSteps(m, StepsMode::kComplete);
  ASSERT_EQ(s.steps.size(), 1u);
  EXPECT_EQ(s.steps[0].begin_ns, 10'000);
  EXPECT_EQ(s.steps[0].end_ns, 25'000);
}

// CPU-only traces keep the host's span.
TEST(Steps, CpuOnlyTraceKeepsTheHostSpan) {
  const trace::TraceModel m = Read(R"J({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 5, "dur": 90}]})J");
  const StepsResult s = FindSteps(m, StepsMode::kComplete);
  ASSERT_EQ(s.steps.size(), 1u);
  EXPECT_FALSE(s.gpu_window);
  EXPECT_EQ(s.steps[0].begin_ns, 5'000);
  EXPECT_EQ(s.steps[0].end_ns, 95'000);
}

}  // namespace
}  // namespace trainprof::analysis
