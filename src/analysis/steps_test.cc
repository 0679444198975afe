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

TEST(Steps, StepNumbersOfTheUsersOwnRanges) {
  const std::vector<std::string> from{"step", "train_step"};
  EXPECT_EQ(StepNumber("ProfilerStep#7", from, 99), 7);
  EXPECT_EQ(StepNumber("step 12", from, 99), 12);
  EXPECT_EQ(StepNumber("train_step#3", from, 99), 3);
  EXPECT_EQ(StepNumber("step", from, 99), 99);
  EXPECT_EQ(StepNumber("steps_total", from, 99), -1);
  EXPECT_EQ(StepNumber("step 1a", from, 99), -1);
  EXPECT_EQ(StepNumber("step 12", {}, 99), -1);
}

// Two "step N" NVTX-style ranges with a kernel each are the steps with --steps-from step, and
// the one "all" window without it.
TEST(Steps, StepsFromNamesTheUsersRanges) {
  const trace::TraceModel m = Read(R"J({"traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "step 1", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 10,
     "dur": 5, "args": {"correlation": 1}},
    {"ph": "X", "cat": "user_annotation", "name": "step 2", "pid": 1, "tid": 1, "ts": 100, "dur": 100},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 110,
     "dur": 5, "args": {"correlation": 2}},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 20, "dur": 50,
     "args": {"correlation": 1, "device": 0, "stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 120, "dur": 50,
     "args": {"correlation": 2, "device": 0, "stream": 7}}]})J");
  const StepsResult s = FindSteps(m, StepsMode::kAll, {"step"});
  ASSERT_EQ(s.steps.size(), 2u);
  EXPECT_FALSE(s.synthetic);
  EXPECT_EQ(s.steps[1].name, "step 2");
  EXPECT_EQ(s.steps[1].number, 2);
  EXPECT_EQ(s.steps[1].launches, 1);
  EXPECT_TRUE(FindSteps(m, StepsMode::kAll).synthetic);
}

}  // namespace
}  // namespace trainprof::analysis
