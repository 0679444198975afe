#include "analysis/idle_causes.h"

#include <gtest/gtest.h>

#include <string>

#include "analysis/analyze.h"
#include "trace/kineto/kineto_reader.h"
#include "trace/trace_files.h"
#include "util/golden.h"

namespace trainprof::analysis {
namespace {

trace::TraceModel ParseEvents(const std::string& events) {
  auto m = trace::ParseTrace(R"({"traceEvents": [)" + events + "]}", "t.json");
  EXPECT_TRUE(m.ok()) << m.status().message();
  return std::move(*m);
}

// A step of 1,000 µs: kernels at 0-100 and 900-1000 µs, so the GPU idles 800 µs, while the host
// is in `host` (its events, µs 100-900).
IdleCauses IdleOf(const std::string& host) {
  const trace::TraceModel m = ParseEvents(R"(
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 1000},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 0, "dur": 100,
     "args": {"device": 0, "stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 900, "dur": 100,
     "args": {"device": 0, "stream": 7}})" +
                                          host);
  return ComputeIdleCauses(m, FindSteps(m, StepsMode::kAll), {});
}

std::string HostRange(const char* cat, const char* name, int ts, int dur) {
  return "," + std::string(R"({"ph": "X", "cat": ")") + cat + R"(", "name": ")" + name +
         R"(", "pid": 1, "tid": 1, "ts": )" + std::to_string(ts) + R"(, "dur": )" +
         std::to_string(dur) + "}";
}

TEST(IdleCauses, GapsGoToTheFirstCauseThatHoldsThem) {
  // 500 µs in the data loader, 200 µs of those also in an operator (the loader wins), 100 µs
  // in cudaStreamSynchronize, 100 µs in an operator, 100 µs in nothing.
  const IdleCauses c =
      IdleOf(HostRange("user_annotation",
                       "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", 100, 500) +
             HostRange("cpu_op", "aten::copy_", 400, 200) +
             HostRange("cuda_runtime", "cudaStreamSynchronize", 600, 100) +
             HostRange("cpu_op", "aten::add", 700, 100));
  EXPECT_EQ(c.idle_ns, 800'000);
  EXPECT_EQ(c.ns[kIdleDataLoader], 500'000);
  EXPECT_EQ(c.ns[kIdleSync], 100'000);
  EXPECT_EQ(c.ns[kIdleLaunch], 0);
  EXPECT_EQ(c.ns[kIdleCpuOps], 100'000);
  EXPECT_EQ(c.ns[kIdleElsewhere], 100'000);
  EXPECT_EQ(c.Largest(), kIdleDataLoader);
  ASSERT_EQ(c.largest.size(), 1u);
  EXPECT_EQ(c.largest[0].begin_ns, 100'000);
  EXPECT_EQ(c.largest[0].dur_ns(), 800'000);
  EXPECT_EQ(c.largest[0].cause, kIdleDataLoader);
}

// The section's bar chart stacks every cause column, each named in snake case.
TEST(IdleCauses, TheChartStacksEveryCauseColumn) {
  std::vector<trace::TraceModel> models;
  models.push_back(ParseEvents(R"(
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 1000},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 0, "dur": 100,
     "args": {"device": 0, "stream": 7}})"));
  const report::Report r = BuildAnalyzeReport(models, AnalyzeAll(models, {}), {}, "t");
  const report::Table* t = nullptr;
  for (const report::Section& s : r.sections)
    if (s.id == "idle_causes") t = &s.tables.at(0);
  ASSERT_NE(t, nullptr);
  std::vector<std::string> keys;
  for (const report::Column& c : t->columns)
    if (c.key.ends_with("_s") && c.key != "idle_s") keys.push_back(c.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"data_loader_s", "synchronisation_s", "launch_calls_s",
                                            "cpu_operators_s", "between_operators_s"}));
  ASSERT_EQ(t->charts.size(), 1u);
  EXPECT_EQ(t->charts[0].values, keys);
}

TEST(IdleCauses, LaunchCallsAndAnIdleHost) {
  IdleCauses c = IdleOf(HostRange("cuda_runtime", "cudaLaunchKernel", 100, 600));
  EXPECT_EQ(c.ns[kIdleLaunch], 600'000);
  EXPECT_EQ(c.ns[kIdleElsewhere], 200'000);
  EXPECT_EQ(c.Largest(), kIdleLaunch);
  c = IdleOf("");
  EXPECT_EQ(c.ns[kIdleElsewhere], 800'000);
  // --dataloader-pattern names a loader of one's own.
  const trace::TraceModel m = ParseEvents(R"(
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 1000},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 0, "dur": 100,
     "args": {"device": 0, "stream": 7}},
    {"ph": "X", "cat": "user_annotation", "name": "load_batch", "pid": 1, "tid": 1, "ts": 100, "dur": 900})");
  c = ComputeIdleCauses(m, FindSteps(m, StepsMode::kAll), {"load_batch"});
  EXPECT_EQ(c.ns[kIdleDataLoader], 900'000);
}

TEST(IdleCauses, TheLongestGapsLongestFirst) {
  std::string kernels;
  for (int i = 0; i < 30; ++i) {  // gaps of 10 + i µs after each kernel
    const int ts = 2000 + i * 100;
    kernels += R"(,{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": )" +
               std::to_string(ts) + R"(, "dur": )" + std::to_string(90 - i) +
               R"(, "args": {"device": 0, "stream": 7}})";
  }
  const trace::TraceModel m = ParseEvents(R"(
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 2000, "dur": 3000})" +
                                          kernels);
  const IdleCauses c = ComputeIdleCauses(m, FindSteps(m, StepsMode::kAll), {});
  ASSERT_EQ(c.largest.size(), kLargestGaps);
  EXPECT_GT(c.largest[0].dur_ns(), c.largest[1].dur_ns());
  for (size_t i = 1; i < c.largest.size(); ++i)
    EXPECT_GE(c.largest[i - 1].dur_ns(), c.largest[i].dur_ns());
}

// SGLang's prefill+decode trace (MI300X): one 493.3 ms gap of its 494.5 ms GPU idle time, the
// host blocked in a hipMemcpyWithStream; the next gap is 0.24 ms.
TEST(IdleCauses, OneLongGapInTheSharedSglangTrace) {
  TRAINPROF_SKIP_WITHOUT_SHARED_TRACES();
  auto models = trace::ReadTraceFiles(
      *trace::ListTraceFiles(std::string(TRAINPROF_SHARED_DIR) +
                             "/data/traces/modern/inference/sglang_prefilldecode"),
      {});
  ASSERT_TRUE(models.ok()) << models.status().message();
  const trace::TraceModel& m = models->front();
  const IdleCauses c = ComputeIdleCauses(m, FindSteps(m, StepsMode::kComplete), {});
  EXPECT_NEAR(static_cast<double>(c.idle_ns) / 1e6, 494.5, 0.05);
  ASSERT_GE(c.largest.size(), 2u);
  EXPECT_NEAR(static_cast<double>(c.largest[0].dur_ns()) / 1e6, 493.3, 0.05);
  EXPECT_NEAR(static_cast<double>(c.largest[1].dur_ns()) / 1e6, 0.24, 0.005);
  EXPECT_EQ(c.largest[0].cause, kIdleSync);
  EXPECT_EQ(c.largest[0].host, "hipMemcpyWithStream");
  EXPECT_EQ(c.Largest(), kIdleSync);
}

}  // namespace
}  // namespace trainprof::analysis
