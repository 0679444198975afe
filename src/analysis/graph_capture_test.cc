// Graph kernels credited to their capture's operators (trace/graph_capture.h), on hand-made
// traces: a replay whose one hipGraphLaunch starts three kernels, and the capture that recorded
// them under aten::mm, aten::add and aten::mm.
#include "trace/graph_capture.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "analysis/categories.h"
#include "analysis/op_tree.h"
#include "analysis/operator_view.h"
#include "trace/kineto/kineto_reader.h"
#include "trace/trace_files.h"
#include "util/golden.h"

namespace trainprof::analysis {
namespace {

// The replay: graph launch call 100..110 us; kernels a (10 us), b (20 us), a (30 us) on stream 3,
// all with the call's correlation id 7; and one ordinary aten::relu launch with its kernel.
std::string ReplayJson() {
  return R"({"traceEvents": [
    {"ph": "X", "cat": "cuda_runtime", "name": "hipGraphLaunch", "pid": 1, "tid": 1, "ts": 100,
     "dur": 10, "args": {"correlation": 7}},
    {"ph": "X", "cat": "kernel", "name": "gemm_a", "pid": 0, "tid": 3, "ts": 200, "dur": 10,
     "args": {"correlation": 7, "stream": 3, "device": 0}},
    {"ph": "X", "cat": "kernel", "name": "add_b", "pid": 0, "tid": 3, "ts": 210, "dur": 20,
     "args": {"correlation": 7, "stream": 3, "device": 0}},
    {"ph": "X", "cat": "kernel", "name": "gemm_a", "pid": 0, "tid": 3, "ts": 230, "dur": 30,
     "args": {"correlation": 7, "stream": 3, "device": 0}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 1, "tid": 1, "ts": 300, "dur": 10},
    {"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 1, "tid": 1, "ts": 302,
     "dur": 5, "args": {"correlation": 8}},
    {"ph": "X", "cat": "kernel", "name": "relu_c", "pid": 0, "tid": 3, "ts": 320, "dur": 4,
     "args": {"correlation": 8, "stream": 3, "device": 0}}]})";
}

trace::TraceModel Replay() {
  auto m = trace::ParseTrace(ReplayJson(), "replay.json");
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? std::move(*m) : trace::TraceModel{};
}

// A capture window 1000..1100 us: aten::mm [1010, 1030] launching `first`, aten::add [1040,
// 1060] launching `second`, aten::mm [1070, 1090] launching `third` (the "kernel" arg ROCm
// writes on launch calls; left out when empty).
std::string CaptureJson(const std::string& first, const std::string& second,
                        const std::string& third) {
  auto launch = [](int ts, const std::string& kernel) {
    const std::string arg = kernel.empty() ? "" : fmt::format(R"(, "kernel": "{}")", kernel);
    return fmt::format(
        R"(, {{"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 5, "tid": 5, )"
        R"("ts": {}, "dur": 2, "args": {{"correlation": {}{}}}}})",
        ts, ts, arg);
  };
  auto op = [](const char* name, int ts) {
    return fmt::format(
        R"(, {{"ph": "X", "cat": "cpu_op", "name": "{}", "pid": 5, "tid": 5, "ts": {}, )"
        R"("dur": 20, "args": {{"Input Dims": [[4, 8], [8, 16]], "Input type": ["float", "float"]}}}})",
        name, ts);
  };
  std::string json =
      R"({"traceEvents": [{"ph": "X", "cat": "cuda_runtime", "name": "hipStreamBeginCapture", )"
      R"("pid": 5, "tid": 5, "ts": 990, "dur": 10})";
  json += op("aten::mm", 1010) + launch(1015, first) + op("aten::add", 1040) +
          launch(1045, second) + op("aten::mm", 1070) + launch(1075, third);
  json +=
      R"(, {"ph": "X", "cat": "cuda_runtime", "name": "hipStreamEndCapture", "pid": 5, "tid": 5, )"
      R"("ts": 1100, "dur": 10}]})";
  return json;
}

trace::TraceModel Capture(const std::string& first, const std::string& second,
                          const std::string& third) {
  auto m = trace::ParseTrace(CaptureJson(first, second, third), "capture.json");
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? std::move(*m) : trace::TraceModel{};
}

std::map<std::string, int64_t> DeviceSelfByOperator(const trace::TraceModel& m) {
  std::map<std::string, int64_t> out;
  for (const OperatorRow& r : OperatorView(m, BuildOpTree(m))) out[r.name] = r.device_self_ns;
  return out;
}

bool HasDiagnostic(const trace::TraceModel& m, base::DiagnosticId id) {
  for (const auto& d : m.diagnostics)
    if (d.id == id) return true;
  return false;
}

TEST(GraphCapture, KernelsGoToTheOperatorsThatLaunchedThemInTheCapture) {
  trace::TraceModel run = Replay();
  const trace::TraceModel cap = Capture("gemm_a", "add_b", "gemm_a");
  const trace::GraphMerge g = trace::MergeGraphCaptures(run, {&cap});
  EXPECT_EQ(g.graph_launches, 1);
  EXPECT_EQ(g.mapped_launches, 1);
  EXPECT_EQ(g.mapped_kernels, 3);
  EXPECT_EQ(g.mapped_ns, 60'000);
  const auto ops = DeviceSelfByOperator(run);
  EXPECT_EQ(ops.at("aten::mm"), 40'000);  // gemm_a twice: 10 + 30 us
  EXPECT_EQ(ops.at("aten::add"), 20'000);
  EXPECT_EQ(ops.at("aten::relu"), 4'000);  // launched outside the graph: unchanged
  EXPECT_TRUE(HasDiagnostic(run, base::DiagnosticId::kGraphKernelsMapped));
  // The copied operators keep their shapes (FLOPs and the roofline read them).
  size_t with_dims = 0;
  for (const auto& [e, set] : run.op_inputs)
    with_dims += run.name_of(e) == "aten::mm" && run.input_sets[set].dims != trace::kNoName;
  EXPECT_EQ(with_dims, 2u);
}

TEST(GraphCapture, RanksOfOneFolderShareItsCaptureTraces) {
  // Three rank files beside one capture_traces/: the capture is read once (CaptureCache) and
  // every rank is mapped from it, unchanged by the ranks mapped before.
  const std::filesystem::path dir = testutil::FreshTempDir();
  std::filesystem::create_directories(dir / "capture_traces");
  std::ofstream(dir / "capture_traces" / "capture.json")
      << CaptureJson("gemm_a", "add_b", "gemm_a");
  std::vector<std::string> files;
  for (int rank = 0; rank < 3; ++rank) {
    files.push_back((dir / fmt::format("rank{}.json", rank)).string());
    std::ofstream(files.back()) << ReplayJson();
  }
  auto runs = trace::ReadTraceFiles(files, {.threads = 3});
  ASSERT_TRUE(runs.ok()) << runs.status().message();
  for (const trace::TraceModel& run : *runs) {
    const auto ops = DeviceSelfByOperator(run);
    EXPECT_EQ(ops.at("aten::mm"), 40'000) << run.path;
    EXPECT_EQ(ops.at("aten::add"), 20'000) << run.path;
  }
}

// Issue 70: a rank read again (the HTA methods' ReadModel) gets the same model passes as the
// run's reading: its graph kernels credited from the capture beside it, not left on the launch.
TEST(GraphCapture, ARankReadAgainIsTheModelTheAnalysisSaw) {
  const std::filesystem::path dir = testutil::FreshTempDir();
  std::filesystem::create_directories(dir / "capture_traces");
  std::ofstream(dir / "capture_traces" / "capture.json")
      << CaptureJson("gemm_a", "add_b", "gemm_a");
  const std::string file = (dir / "rank0.json").string();
  std::ofstream(file) << ReplayJson();
  auto again = trace::ReadModel(file, {});
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(DeviceSelfByOperator(*again).at("aten::mm"), 40'000);
  auto runs = trace::ReadTraceFiles({file}, {});
  ASSERT_TRUE(runs.ok()) << runs.status().message();
  EXPECT_EQ(again->size(), runs->front().size());
}

TEST(GraphCapture, CopiedOperatorsLieInsideTheGraphLaunchCall) {
  trace::TraceModel run = Replay();
  const trace::TraceModel cap = Capture("gemm_a", "add_b", "gemm_a");
  const size_t before = run.size();
  trace::MergeGraphCaptures(run, {&cap});
  ASSERT_EQ(run.size(), before + 6);  // three operators, three launch calls
  for (size_t i = before; i < run.size(); ++i) {
    EXPECT_GE(run.ts_ns[i], 100'000);  // the capture's 100 us window maps onto the 10 us call
    EXPECT_LE(run.end_ns(i), 110'000);
  }
  // aten::mm starts 10 us into the 100 us window (after BeginCapture ends at 1000 us): 1 us into
  // the 10 us call.
  EXPECT_EQ(run.ts_ns[before], 101'000);
}

TEST(GraphCapture, WithoutKernelNamesTheOrderOfWorkDecides) {
  trace::TraceModel run = Replay();
  const trace::TraceModel cap = Capture("", "", "");  // CUDA launch calls carry no name
  EXPECT_EQ(trace::MergeGraphCaptures(run, {&cap}).mapped_launches, 1);
  EXPECT_EQ(DeviceSelfByOperator(run).at("aten::add"), 20'000);
}

TEST(GraphCapture, ACaptureOfOtherKernelsIsNotUsed) {
  trace::TraceModel run = Replay();
  const trace::TraceModel cap = Capture("gemm_a", "softmax", "gemm_a");
  const trace::GraphMerge g = trace::MergeGraphCaptures(run, {&cap});
  EXPECT_EQ(g.mapped_launches, 0);
  EXPECT_EQ(g.unmapped_ns, 60'000);
  EXPECT_TRUE(HasDiagnostic(run, base::DiagnosticId::kGraphKernelsUnmapped));
  // The graph's kernels form one row of their own.
  EXPECT_EQ(DeviceSelfByOperator(run).at("graph replay (hipGraphLaunch, 3 kernels)"), 60'000);
  // Why, where the user looks: not "pass --capture-trace", which they did.
  EXPECT_EQ(run.graph_capture.why,
            "graph launch 1 of 1: kernel 2 of 3 differs: the graph ran add_b, the capture "
            "launched softmax");
  EXPECT_EQ(run.graph_capture.captures, 1);
  for (const auto& d : run.diagnostics) {
    if (d.id == base::DiagnosticId::kGraphKernelsUnmapped) {
      EXPECT_EQ(d.message.find("pass --capture-trace"), std::string::npos) << d.message;
    }
  }
}

// A replay whose graph launch (correlation 7) ran `work` in this order: (category, name, stream).
trace::TraceModel ReplayOf(const std::vector<std::tuple<std::string, std::string, int>>& work) {
  std::string json = R"({"traceEvents": [
    {"ph": "X", "cat": "cuda_runtime", "name": "hipGraphLaunch", "pid": 1, "tid": 1, "ts": 100,
     "dur": 10, "args": {"correlation": 7}})";
  int ts = 200;
  for (const auto& [cat, name, stream] : work) {
    json += fmt::format(
        R"(, {{"ph": "X", "cat": "{}", "name": "{}", "pid": 0, "tid": {}, "ts": {}, "dur": 10, )"
        R"("args": {{"correlation": 7, "stream": {}, "device": 0}}}})",
        cat, name, stream, ts, stream);
    ts += 10;
  }
  auto m = trace::ParseTrace(json + "]}", "replay.json");
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? std::move(*m) : trace::TraceModel{};
}

// A graph captured on two streams runs its kernels interleaved, not in the order the host
// launched them: with the kernels named, each goes to its own launch all the same.
TEST(GraphCapture, AGraphOfTwoStreamsIsMatchedKernelByKernel) {
  trace::TraceModel run =
      ReplayOf({{"kernel", "gemm_a", 3}, {"kernel", "add_b", 4}, {"kernel", "gemm_c", 3}});
  const trace::TraceModel cap = Capture("gemm_a", "gemm_c", "add_b");
  const trace::GraphMerge g = trace::MergeGraphCaptures(run, {&cap});
  EXPECT_EQ(g.mapped_launches, 1);
  EXPECT_EQ(g.mapped_kernels, 3);
  const auto ops = DeviceSelfByOperator(run);
  // The capture launched gemm_a and add_b under aten::mm, gemm_c under aten::add; add_b ran
  // second in the replay, gemm_c third.
  EXPECT_EQ(ops.at("aten::mm"), 20'000);
  EXPECT_EQ(ops.at("aten::add"), 10'000);
}

// A memset the capture did not launch (or one it launched that the replay lacks) does not keep
// the kernels from their operators.
TEST(GraphCapture, KernelsMatchWhenTheMemsetsDiffer) {
  trace::TraceModel run = ReplayOf({{"gpu_memset", "Memset (Device)", 3},
                                    {"kernel", "gemm_a", 3},
                                    {"kernel", "add_b", 3},
                                    {"kernel", "gemm_a", 3}});
  const trace::TraceModel cap = Capture("", "", "");  // no names: kernels in order
  const trace::GraphMerge g = trace::MergeGraphCaptures(run, {&cap});
  EXPECT_EQ(g.mapped_launches, 1);
  EXPECT_EQ(g.mapped_kernels, 3);
  EXPECT_EQ(DeviceSelfByOperator(run).at("aten::add"), 10'000);
  // Counts of kernels that differ are said as counts.
  trace::TraceModel more = ReplayOf({{"kernel", "gemm_a", 3},
                                     {"kernel", "add_b", 3},
                                     {"kernel", "gemm_a", 3},
                                     {"kernel", "gemm_a", 3}});
  trace::MergeGraphCaptures(more, {&cap});
  EXPECT_EQ(more.graph_capture.why,
            "graph launch 1 of 1: the graph ran 4 kernels; the nearest of 1 capture windows "
            "launched 3 kernels");
}

// A capture that launched `kernels` (by name, ROCm's "kernel" arg), each under its own aten::mm.
trace::TraceModel CaptureOfKernels(const std::vector<std::string>& kernels) {
  std::string json =
      R"({"traceEvents": [{"ph": "X", "cat": "cuda_runtime", "name": "hipStreamBeginCapture", )"
      R"("pid": 5, "tid": 5, "ts": 990, "dur": 10})";
  int ts = 1000;
  for (const std::string& k : kernels) {
    json += fmt::format(
        R"(, {{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 5, "tid": 5, "ts": {}, )"
        R"("dur": 8}}, {{"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 5, )"
        R"("tid": 5, "ts": {}, "dur": 2, "args": {{"correlation": {}, "kernel": "{}"}}}})",
        ts, ts + 2, ts + 2, k);
    ts += 10;
  }
  json += fmt::format(
      R"(, {{"ph": "X", "cat": "cuda_runtime", "name": "hipStreamEndCapture", "pid": 5, )"
      R"("tid": 5, "ts": {}, "dur": 10}}]}})",
      ts);
  auto m = trace::ParseTrace(json, "capture.json");
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? std::move(*m) : trace::TraceModel{};
}

// Issue 69: xDiT's graph ran 1,566 kernels of its capture's 1,567. A large graph matches within
// 0.1 % of its kernels (at least one), and the diagnostic says what differed.
TEST(GraphCapture, ALargeGraphMatchesWithinAStatedTolerance) {
  std::vector<std::string> captured;
  std::vector<std::tuple<std::string, std::string, int>> ran;
  for (int i = 0; i < 600; ++i) {
    captured.push_back(i % 2 ? "add_b" : "gemm_a");
    if (i != 300) ran.emplace_back("kernel", captured.back(), 3);  // one kernel not run
  }
  const trace::TraceModel cap = CaptureOfKernels(captured);
  trace::TraceModel run = ReplayOf(ran);
  const trace::GraphMerge g = trace::MergeGraphCaptures(run, {&cap});
  EXPECT_EQ(g.mapped_launches, 1);
  EXPECT_EQ(g.mapped_kernels, 599);
  EXPECT_EQ(g.tolerant, 1);
  EXPECT_EQ(g.first_tolerated,
            "graph launch 1 of 1: the capture launched 1 kernel the graph did not run (600 in the "
            "capture, 599 in the graph)");
  bool said = false;
  for (const auto& d : run.diagnostics)
    said |= d.id == base::DiagnosticId::kGraphKernelsMapped &&
            d.message.find("1 of them within the tolerance of 0.1 % of the kernels") !=
                std::string::npos;
  EXPECT_TRUE(said);
  // Two kernels off is beyond the tolerance of a 600-kernel graph: no match.
  ran.pop_back();
  trace::TraceModel two = ReplayOf(ran);
  EXPECT_EQ(trace::MergeGraphCaptures(two, {&cap}).mapped_launches, 0);
}

TEST(GraphCapture, WithoutACaptureTheGraphIsOneOperatorRow) {
  trace::TraceModel run = Replay();
  trace::MergeGraphCaptures(run, {});
  const auto ops = DeviceSelfByOperator(run);
  EXPECT_EQ(ops.at("graph replay (hipGraphLaunch, 3 kernels)"), 60'000);
  EXPECT_FALSE(ops.contains("aten::mm"));
}

// torch.compile's mode="reduce-overhead" replays CUDA graphs inside CompiledFunction: the
// graph's row sits under it, and its kernels (elementwise by name) take the compiled category.
TEST(GraphCapture, AGraphReplayedByCompiledFunctionIsCompiledWork) {
  auto m = trace::ParseTrace(R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "CompiledFunction", "pid": 1, "tid": 1, "ts": 90,
     "dur": 30},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "pid": 1, "tid": 1, "ts": 100,
     "dur": 10, "args": {"correlation": 7}},
    {"ph": "X", "cat": "kernel", "name": "vectorized_elementwise_kernel", "pid": 0, "tid": 3, "ts": 200,
     "dur": 10, "args": {"correlation": 7, "stream": 3, "device": 0}}]})",
                             "compiled.json");
  ASSERT_TRUE(m.ok()) << m.status().message();
  trace::MergeGraphCaptures(*m, {});
  const OpTree tree = BuildOpTree(*m);
  EXPECT_EQ(DeviceSelfByOperator(*m).at("graph replay (cudaGraphLaunch, 1 kernels)"), 10'000);
  const CategoryResult c = ComputeCategories(*m, tree);
  EXPECT_EQ(c.by[static_cast<size_t>(OpCategory::kCompiled)].ns, 10'000);
}

TEST(GraphCapture, ATraceWithoutGraphsIsUnchanged) {
  trace::TraceModel run = trace::TraceModel{};
  auto m = trace::ParseTrace(
      R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, )"
      R"("ts": 0, "dur": 5}]})",
      "plain.json");
  ASSERT_TRUE(m.ok());
  run = std::move(*m);
  const trace::TraceModel cap = Capture("gemm_a", "add_b", "gemm_a");
  const size_t diagnostics = run.diagnostics.size();
  EXPECT_EQ(trace::MergeGraphCaptures(run, {&cap}).graph_launches, 0);
  EXPECT_EQ(run.size(), 1u);
  EXPECT_EQ(run.diagnostics.size(), diagnostics);
}

}  // namespace
}  // namespace trainprof::analysis
