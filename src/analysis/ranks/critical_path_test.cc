// The critical path on hand-made graphs whose longest path is worked out in the comments, and
// on HTA's critical_path_simple_add when ../shared/data/traces is beside the checkout.
#include "analysis/ranks/critical_path.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "trace/kineto/kineto_reader.h"
#include "util/golden.h"

namespace trainprof::analysis {
namespace {

using trace::EventKind;

// A model with one CPU thread (track 0) and one GPU stream (track 1).
struct Builder {
  trace::TraceModel m;
  Builder() {
    m.tracks.push_back({1, 1, -1, -1});
    m.tracks.push_back({0, 7, 0, 7});
  }
  size_t Cpu(EventKind k, const char* name, int64_t ts, int64_t dur, int64_t corr = -1) {
    size_t i = m.Add(k, name, ts, dur, 0);
    m.correlation.Set(i, corr);
    return i;
  }
  size_t Gpu(EventKind k, const char* name, int64_t ts, int64_t dur, int64_t corr) {
    size_t i = m.Add(k, name, ts, dur, 1);
    m.correlation.Set(i, corr);
    return i;
  }
  trace::TraceModel Done() {
    m.LinkLaunches();
    return std::move(m);
  }
};

int64_t Cat(const CriticalPath& p, CpCategory c) { return p.category_ns[static_cast<int>(c)]; }

// CPU-bound: A [0,100) launches K [30,50) at [10,20); B [100,200) follows A. The path runs
// through A and B (200) rather than the kernel (ends at 50).
TEST(CriticalPath, CpuBound) {
  Builder b;
  b.Cpu(EventKind::kCpuOp, "A", 0, 100);
  b.Cpu(EventKind::kRuntime, "cudaLaunchKernel", 10, 10, 1);
  b.Gpu(EventKind::kKernel, "k", 30, 20, 1);
  b.Cpu(EventKind::kCpuOp, "B", 100, 100);
  trace::TraceModel m = b.Done();
  auto p = ComputeCriticalPath(m, 0, 200);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->length_ns, 200);
  EXPECT_EQ(Cat(*p, CpCategory::kCpuBound), 200);
  EXPECT_DOUBLE_EQ(p->pct(CpCategory::kCpuBound), 100);
  // A.start, launch start, launch end, A.end, B.start, B.end.
  EXPECT_EQ(p->nodes, 6);
  ASSERT_FALSE(p->top.empty());
  EXPECT_EQ(m.name_of(p->top[0].event), "B");
}

// GPU-bound with a stream sync: A [0,30) launches K [20,520) at [5,10); cudaStreamSynchronize
// [40,530) waits for it ("Stream Sync"); C [540,560) follows. Path: A's 5 before the launch, the
// launch delay 15, K's 500, the sync edge, C's 20: 540, against 50 on the CPU alone.
void ExpectGpuBoundThroughAStreamSync(const char* launch, const char* sync) {
  Builder b;
  b.Cpu(EventKind::kCpuOp, "A", 0, 30);
  b.Cpu(EventKind::kRuntime, launch, 5, 5, 1);
  b.Gpu(EventKind::kKernel, "gemm", 20, 500, 1);
  b.Cpu(EventKind::kRuntime, sync, 40, 490, 2);
  b.Gpu(EventKind::kOther, "Stream Sync", 520, 5, 2);
  b.Cpu(EventKind::kCpuOp, "C", 540, 20);
  trace::TraceModel m = b.Done();
  auto p = ComputeCriticalPath(m, 0, 600);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->length_ns, 540);
  EXPECT_EQ(Cat(*p, CpCategory::kCpuBound), 25);
  EXPECT_EQ(Cat(*p, CpCategory::kGpuKernelLaunchOverhead), 15);
  EXPECT_EQ(Cat(*p, CpCategory::kGpuComputeBound), 500);
  EXPECT_EQ(p->edge_ns[static_cast<int>(CpEdge::kSync)], 0);
  EXPECT_EQ(m.name_of(p->top[0].event), "gemm");
}

TEST(CriticalPath, GpuBoundThroughAStreamSync) {
  ExpectGpuBoundThroughAStreamSync("cudaLaunchKernel", "cudaStreamSynchronize");
}

// The same graph through an event: cudaEventRecord [12,14) after the launch records on stream 7,
// cudaEventSynchronize [40,530) waits for it ("Event Sync", wait_on_stream 7). The event sync
// edge runs from gemm's end to the waiting call's end: the same 540 with gemm's 500 on it. A
// trace without cudaEventRecord calls gets no such edge (HTA adds none either), and no path
// then runs from the kernel on to C.
trace::TraceModel EventSyncModel(bool with_record) {
  Builder b;
  b.Cpu(EventKind::kCpuOp, "A", 0, 30);
  b.Cpu(EventKind::kRuntime, "cudaLaunchKernel", 5, 5, 1);
  b.Gpu(EventKind::kKernel, "gemm", 20, 500, 1);
  if (with_record) b.Cpu(EventKind::kRuntime, "cudaEventRecord", 12, 2, 2);
  b.Cpu(EventKind::kRuntime, "cudaEventSynchronize", 40, 490, 3);
  size_t sync = b.Gpu(EventKind::kOther, "Event Sync", 520, 5, 3);
  b.m.sync_waits.push_back({static_cast<uint32_t>(sync), 7, with_record ? 2 : -1});
  b.Cpu(EventKind::kCpuOp, "C", 540, 20);
  return b.Done();
}

TEST(CriticalPath, GpuBoundThroughAnEventSync) {
  trace::TraceModel m = EventSyncModel(true);
  auto p = ComputeCriticalPath(m, 0, 600);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->length_ns, 540);
  EXPECT_EQ(Cat(*p, CpCategory::kGpuComputeBound), 500);
  EXPECT_EQ(m.name_of(p->top[0].event), "gemm");

  trace::TraceModel bare = EventSyncModel(false);
  auto q = ComputeCriticalPath(bare, 0, 600);
  ASSERT_TRUE(q.ok()) << q.status().message();
  EXPECT_LT(q->length_ns, 540);  // gemm's path ends at gemm: nothing joins it to C
}

// Stream Wait Event: gemm [20,520) on stream 7; cudaStreamWaitEvent makes stream 9 wait for it,
// so add [520,530) on stream 9, launched at [30,35), starts when gemm ends. The sync edge from
// gemm's end to add's start is add's only way in, as in HTA (issue 69: on HTA's AlexNet trace a
// launch edge beside it made 441 µs of launch overhead HTA does not have): gemm's launch, gemm
// and add make the path of 530. A wait whose waited work ends after the waiting stream's next
// work starts gets no edge, never an error.
trace::TraceModel StreamWaitModel(int64_t add_start) {
  Builder b;
  b.m.tracks.push_back({0, 9, 0, 9});
  b.Cpu(EventKind::kCpuOp, "A", 0, 40);
  b.Cpu(EventKind::kRuntime, "cudaLaunchKernel", 5, 5, 1);
  b.Gpu(EventKind::kKernel, "gemm", 20, 500, 1);
  b.Cpu(EventKind::kRuntime, "cudaEventRecord", 12, 2, 2);
  b.Cpu(EventKind::kRuntime, "cudaStreamWaitEvent", 20, 5, 3);
  size_t wait = b.m.Add(EventKind::kOther, "Stream Wait Event", 24, 1, 2);
  b.m.correlation.Set(wait, 3);
  b.m.sync_waits.push_back({static_cast<uint32_t>(wait), 7, 2});
  b.Cpu(EventKind::kRuntime, "cudaLaunchKernel", 30, 5, 4);
  size_t add = b.m.Add(EventKind::kKernel, "add", add_start, 10, 2);
  b.m.correlation.Set(add, 4);
  return b.Done();
}

TEST(CriticalPath, StreamWaitEventJoinsTheStreams) {
  trace::TraceModel m = StreamWaitModel(520);
  auto p = ComputeCriticalPath(m, 0, 600);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->length_ns, 530);
  EXPECT_EQ(Cat(*p, CpCategory::kGpuKernelLaunchOverhead), 15);
  EXPECT_EQ(Cat(*p, CpCategory::kGpuComputeBound), 510);
  trace::TraceModel early = StreamWaitModel(100);  // add starts before gemm ends
  auto q = ComputeCriticalPath(early, 0, 600);
  ASSERT_TRUE(q.ok()) << q.status().message();
  EXPECT_EQ(q->length_ns, 520);
}

// ROCm: the same graph with HIP's names (hipStreamSynchronize is a blocking call too).
TEST(CriticalPath, GpuBoundThroughAStreamSyncOnRocm) {
  ExpectGpuBoundThroughAStreamSync("hipLaunchKernel", "hipStreamSynchronize");
}

// Back-to-back kernels: K1 [20,100) and K2 [110,200), both launched inside A [0,30) before K1
// ends, so K2 follows K1 with a 10 kernel-kernel gap. Path: 5 + 15 + 80 + 10 + 90 = 200.
trace::TraceModel BackToBack(const char* second) {
  Builder b;
  b.Cpu(EventKind::kCpuOp, "A", 0, 30);
  b.Cpu(EventKind::kRuntime, "cudaLaunchKernel", 5, 5, 1);
  b.Cpu(EventKind::kRuntime, "cudaLaunchKernel", 12, 5, 2);
  b.Gpu(EventKind::kKernel, "k1", 20, 80, 1);
  b.Gpu(EventKind::kKernel, second, 110, 90, 2);
  return b.Done();
}

TEST(CriticalPath, KernelKernelDelay) {
  trace::TraceModel m = BackToBack("ncclDevKernel_AllReduce_Sum_f32");
  auto p = ComputeCriticalPath(m, 0, 300);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->length_ns, 200);
  EXPECT_EQ(Cat(*p, CpCategory::kCpuBound), 5);
  EXPECT_EQ(Cat(*p, CpCategory::kGpuKernelLaunchOverhead), 15);
  EXPECT_EQ(Cat(*p, CpCategory::kGpuComputeBound), 80);
  EXPECT_EQ(Cat(*p, CpCategory::kGpuKernelKernelOverhead), 10);
  EXPECT_EQ(Cat(*p, CpCategory::kGpuCommunicationBound), 90);
}

// With all_edges the graph's other edges come too (HTA's overlay with show_all_edges): none of
// them on the path, no launch edge of no weight, and without it none.
TEST(CriticalPath, AllEdgesAreTheGraphsOthers) {
  trace::TraceModel m = BackToBack("k2");
  auto path = ComputeCriticalPath(m, 0, 300);
  ASSERT_TRUE(path.ok()) << path.status().message();
  EXPECT_TRUE(path->others.empty());
  auto all = ComputeCriticalPath(m, 0, 300, {.all_edges = true});
  ASSERT_TRUE(all.ok()) << all.status().message();
  EXPECT_EQ(all->length_ns, path->length_ns);
  ASSERT_FALSE(all->others.empty());
  for (const CriticalPath::Step& o : all->others) {
    EXPECT_FALSE(o.type == CpEdge::kLaunchDelay && o.weight_ns == 0);
    for (const CriticalPath::Step& s : all->steps)
      EXPECT_FALSE(o.from_node == s.from_node && o.to_node == s.to_node);
  }
}

TEST(CriticalPath, AnnotationWindowAndErrors) {
  Builder b;
  b.Cpu(EventKind::kUserAnnotation, "[x|forward]", 0, 50);
  b.Cpu(EventKind::kUserAnnotation, "[x|forward]", 100, 70);
  trace::TraceModel m = b.Done();
  auto w = FindAnnotationWindow(m, "forward", 1);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->first, 100);
  EXPECT_EQ(w->second, 170);
  EXPECT_FALSE(FindAnnotationWindow(m, "forward", 2).ok());
  EXPECT_FALSE(FindAnnotationWindow(m, "backward", 0).ok());
  EXPECT_FALSE(ComputeCriticalPath(m, 0, 200).ok());     // annotations only: no node
  auto both = FindAnnotationWindow(m, "forward", 0, 1);  // HTA's instance_id=(0, 1)
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(*both, (std::pair<int64_t, int64_t>{0, 170}));
  EXPECT_FALSE(FindAnnotationWindow(m, "forward", 1, 2).ok());
  auto whole = FindAnnotationWindow(m, "", 0);  // HTA's "": the whole trace
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(*whole, (std::pair<int64_t, int64_t>{0, 170}));
}

// HTA's data_load_events: a host range matching one (a regular expression) gets nodes, and its
// time on the path is data_loading. "load_batch#3" [0,100) then A [100,150): the path runs
// through both, 100 data loading and 50 CPU; without the pattern the range has no node.
TEST(CriticalPath, DataLoadEventsAreDataLoading) {
  Builder b;
  b.Cpu(EventKind::kUserAnnotation, "load_batch#3", 0, 100);
  b.Cpu(EventKind::kCpuOp, "A", 100, 50);
  trace::TraceModel m = b.Done();
  auto p = ComputeCriticalPath(m, 0, 200, {.data_load = {"load_batch#[0-9]+"}});
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->length_ns, 150);
  EXPECT_EQ(Cat(*p, CpCategory::kDataLoading), 100);
  EXPECT_EQ(Cat(*p, CpCategory::kCpuBound), 50);
  // The path's steps name their ends: load_batch's start, its end (a dependency), A's start.
  ASSERT_EQ(p->steps.size(), 3u);
  EXPECT_TRUE(p->steps[0].from_start);
  EXPECT_FALSE(p->steps[0].to_start);
  EXPECT_EQ(p->steps[1].type, CpEdge::kDependency);
  EXPECT_EQ(m.name_of(p->steps[2].to_event), "A");

  auto without = ComputeCriticalPath(m, 0, 200);
  ASSERT_TRUE(without.ok());
  EXPECT_EQ(without->length_ns, 50);
  auto bad = ComputeCriticalPath(m, 0, 200, {.data_load = {"load_batch("}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("\"load_batch(\" is not a regular expression"),
            std::string::npos);
}

// HTA 0.6.1's answer (expected/critical_path_simple_add.critical_path.json) for the second
// "measure|forward" range of rank 0. docs/trace-analysis.md explains the differences allowed.
TEST(CriticalPath, MatchesHtaOnSimpleAdd) {
  TRAINPROF_SKIP_WITHOUT_SHARED_TRACES();
  const std::string dir = std::string(TRAINPROF_SHARED_DIR) + "/data/traces/";
  std::ifstream in(dir + "expected/critical_path_simple_add.critical_path.json");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  nlohmann::json want = nlohmann::json::parse(text.substr(text.find('{')));
  auto m = trace::ReadTraceFile(
      dir + "critical_path_simple_add/benchmark_result_493459_1694039959_trace.json.gz", {});
  ASSERT_TRUE(m.ok()) << m.status().message();
  auto w = FindAnnotationWindow(*m, want["annotation"], want["instance"]);
  ASSERT_TRUE(w.ok()) << w.status().message();
  auto p = ComputeCriticalPath(*m, w->first, w->second);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_NEAR(static_cast<double>(p->length_ns) / 1000,
              want["critical_path_length_us"].get<double>(), 1.0);
  for (auto& [key, pct] : want["summary_pct"].items()) {
    if (key.empty()) continue;
    for (int c = 0; c < kNumCpCategories; ++c) {
      if (key == CpCategoryName(static_cast<CpCategory>(c))) {
        EXPECT_NEAR(p->pct(static_cast<CpCategory>(c)), pct.get<double>(), 0.01) << key;
      }
    }
  }
  for (auto& [key, us] : want["by_edge_type_us"].items()) {
    for (int e = 0; e < kNumCpEdges; ++e) {
      if (key == CpEdgeName(static_cast<CpEdge>(e))) {
        EXPECT_NEAR(static_cast<double>(p->edge_ns[e]) / 1000, us.get<double>(), 1.0) << key;
      }
    }
  }
  EXPECT_EQ(p->nodes, want["critical_path_nodes"].get<int64_t>());
}

}  // namespace
}  // namespace trainprof::analysis
