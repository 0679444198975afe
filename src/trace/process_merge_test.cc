// Files of one process merged into one rank (process_merge.h), on hand-made cycles that each
// reuse correlation id 1, as a new profiler session's ids may.
#include "trace/process_merge.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "trace/kineto/kineto_reader.h"

namespace trainprof::trace {
namespace {

// One profiling cycle of process `pid`: ProfilerStep#step from `at` us (100 us long), a launch
// at at + 10 and its kernel at at + 50, both with correlation 1.
TraceModel Cycle(int pid, int step, int at, std::string file = "") {
  const std::string json = fmt::format(
      R"({{"traceEvents": [)"
      R"({{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{1}", "pid": {0}, )"
      R"("tid": 1, "ts": {2}, "dur": 100}}, )"
      R"({{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": {0}, "tid": 1, )"
      R"("ts": {3}, "dur": 5, "args": {{"correlation": 1}}}}, )"
      R"({{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": {4}, "dur": 20, )"
      R"("args": {{"correlation": 1, "stream": 7, "device": 0}}}}]}})",
      pid, step, at, at + 10, at + 50);
  if (file.empty()) file = fmt::format("worker.{}.pt.trace.json", at);
  auto m = ParseTrace(json, file);
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? std::move(*m) : TraceModel{};
}

size_t Steps(const TraceModel& m) {
  size_t n = 0;
  for (size_t i = 0; i < m.size(); ++i) n += m.name_of(i).starts_with("ProfilerStep#");
  return n;
}

TEST(FilesOfOneProcess, CyclesOfOneProcessAreOneRankWithTheirOwnLaunches) {
  std::vector<TraceModel> in;
  in.push_back(Cycle(42, 3, 2000));  // out of order on purpose
  in.push_back(Cycle(42, 1, 0));
  in.push_back(Cycle(42, 2, 1000));
  const std::vector<TraceModel> out = MergeFilesOfOneProcess(std::move(in));
  ASSERT_EQ(out.size(), 1u);
  const TraceModel& m = out.front();
  EXPECT_EQ(Steps(m), 3u);
  EXPECT_EQ(m.path, "worker.0.pt.trace.json");  // the earliest file
  size_t kernels = 0;
  for (size_t i = 0; i < m.size(); ++i) {
    if (m.kind[i] != EventKind::kKernel) continue;
    ++kernels;
    ASSERT_GE(m.launcher[i], 0);  // each kernel keeps its own cycle's launch call
    EXPECT_EQ(m.ts_ns[i] - m.ts_ns[static_cast<size_t>(m.launcher[i])], 40'000);
  }
  EXPECT_EQ(kernels, 3u);
  bool said = false;
  for (const auto& d : m.diagnostics) said |= d.id == base::DiagnosticId::kFilesOfOneProcess;
  EXPECT_TRUE(said);
}

TEST(FilesOfOneProcess, OtherProcessesAndOverlappingFilesStayApart) {
  std::vector<TraceModel> in;
  in.push_back(Cycle(42, 1, 0, "a.json"));
  in.push_back(Cycle(43, 1, 1000, "b.json"));  // another process
  in.push_back(Cycle(42, 1, 50, "c.json"));    // overlaps the first file's span, no worker name
  EXPECT_EQ(MergeFilesOfOneProcess(std::move(in)).size(), 3u);
}

// The legacy profiler's export starts each file's clock at 0: a worker's cycles, in the order
// of their export stamps, are placed one after another.
TEST(FilesOfOneProcess, CyclesWhoseClocksStartAtZeroFollowOneAnother) {
  std::vector<TraceModel> in;
  in.push_back(Cycle(42, 2, 0, "host_42.1700000000200.pt.trace.json"));
  in.push_back(Cycle(42, 1, 0, "host_42.1700000000100.pt.trace.json"));
  const std::vector<TraceModel> out = MergeFilesOfOneProcess(std::move(in));
  ASSERT_EQ(out.size(), 1u);
  const TraceModel& m = out.front();
  std::vector<int64_t> step_starts;
  for (size_t i = 0; i < m.size(); ++i)
    if (m.name_of(i).starts_with("ProfilerStep#")) step_starts.push_back(m.ts_ns[i]);
  // Step 1's file first (100 us long, its kernel ending at 70 us), then step 2's from its end.
  EXPECT_EQ(step_starts, (std::vector<int64_t>{0, 100'000}));
}

}  // namespace
}  // namespace trainprof::trace
