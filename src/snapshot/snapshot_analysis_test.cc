// The analysis on snapshots written by trainprof's own pickle writer (operators/memory_snapshot),
// built here event by event so every answer follows from the construction.
#include "snapshot/snapshot_analysis.h"

#include <gtest/gtest.h>

#include "operators/memory_snapshot.h"
#include "report/report.h"
#include "snapshot/snapshot_model.h"
#include "snapshot/snapshot_section.h"

namespace trainprof::snapshot {
namespace {

using torchlib::MemFrame;
using torchlib::MemSnapshot;
using torchlib::MemTraceEntry;

constexpr int64_t kMiB = 1 << 20;
constexpr uint64_t kBase = 0x7f0000000000;

std::vector<MemFrame> Stack(const std::string& fn) {
  return {{"??", 0, "c10::cuda::CUDACachingAllocator::malloc"},
          {"/w/model.py", 10, fn},
          {"/w/train.py", 3, "main"}};
}

// A history built as it is recorded: allocs and frees with the allocated total kept beside it.
struct History {
  MemSnapshot s;
  int64_t t = 100, allocated = 0, peak = 0, peak_time = 0;
  History() { s.device_traces.resize(1); }
  void Add(MemTraceEntry e) {
    e.time_us = ++t;
    s.device_traces[0].push_back(std::move(e));
  }
  void Segment(uint64_t addr, int64_t size) {
    Add({.action = "segment_alloc", .addr = addr, .size = size});
  }
  void Alloc(uint64_t addr, int64_t size, const std::string& fn) {
    Add({.action = "alloc", .addr = addr, .size = size, .frames = Stack(fn)});
    allocated += size;
    if (allocated > peak) peak = allocated, peak_time = t;
  }
  void Free(uint64_t addr, int64_t size, const std::string& fn) {
    Add({.action = "free_requested", .addr = addr, .size = size, .frames = Stack(fn)});
    Add({.action = "free_completed", .addr = addr, .size = size, .frames = Stack(fn)});
    allocated -= size;
  }
};

std::vector<DeviceMemory> Analyse(const MemSnapshot& s, SnapshotOptions o = {}) {
  auto m = ReadSnapshotBytes(torchlib::SnapshotPickle(s), "own.pickle");
  EXPECT_TRUE(m.ok()) << m.status().message();
  if (!m.ok()) return {};
  return AnalyzeSnapshot(*m, o);
}

// The snapshot sections of a history, as `trainprof analyze` writes them.
report::Report SectionsOf(const History& h) {
  report::Report r;
  auto m = ReadSnapshotBytes(torchlib::SnapshotPickle(h.s), "own.pickle");
  EXPECT_TRUE(m.ok()) << m.status().message();
  if (m.ok()) AddSnapshotSections(*m, AnalyzeSnapshot(*m, {}), {}, r);
  return r;
}

TEST(SnapshotAnalysis, PeakAndLiveStacksOfTheProjectsOwnPickle) {
  History h;
  h.Segment(kBase, 64 * kMiB);
  h.Alloc(kBase, 8 * kMiB, "weights");
  h.Alloc(kBase + 8 * kMiB, 4 * kMiB, "activation");
  h.Alloc(kBase + 12 * kMiB, 4 * kMiB, "activation");
  h.Free(kBase + 8 * kMiB, 4 * kMiB, "activation");
  h.Alloc(kBase + 16 * kMiB, 2 * kMiB, "grad");
  std::vector<DeviceMemory> d = Analyse(h.s);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].peak_allocated, h.peak);
  EXPECT_EQ(d[0].peak_time_us, h.peak_time - 101);  // from the first event
  EXPECT_EQ(d[0].peak_reserved, 64 * kMiB);
  ASSERT_EQ(d[0].live_at_peak.size(), 2u);
  EXPECT_EQ(d[0].live_at_peak[0].bytes, 8 * kMiB);
  EXPECT_EQ(d[0].live_at_peak[0].stack.rfind("activation (model.py:10) <- main", 0), 0u)
      << d[0].live_at_peak[0].stack;
  EXPECT_EQ(d[0].live_at_peak[0].blocks, 2);
  EXPECT_EQ(d[0].live_at_peak[1].bytes, 8 * kMiB);
  EXPECT_FALSE(d[0].starts_late);
  EXPECT_EQ(d[0].curve.back().allocated, h.allocated);
}

TEST(SnapshotAnalysis, ASegmentFreedAndAllocatedAgainIsARetry) {
  History h;
  h.Segment(kBase, 2 * kMiB);
  h.Add({.action = "segment_free", .addr = kBase, .size = 2 * kMiB});
  h.Segment(kBase + 4 * kMiB, 8 * kMiB);
  h.Alloc(kBase + 4 * kMiB, 8 * kMiB, "big");
  std::vector<DeviceMemory> d = Analyse(h.s);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].retries, 1);
  EXPECT_EQ(d[0].peak_reserved, 8 * kMiB);
}

TEST(SnapshotAnalysis, FreesOfBlocksBeforeTheHistorySayItStartsLate) {
  History h;
  h.Free(kBase, kMiB, "old");  // allocated before the ring buffer's first entry
  h.Alloc(kBase + kMiB, 2 * kMiB, "new");
  torchlib::MemSegment seg{.device = 0, .address = kBase, .total_size = 4 * kMiB};
  seg.blocks.push_back({.size = 2 * kMiB, .address = kBase + kMiB, .state = "active_allocated"});
  h.s.segments.push_back(seg);
  std::vector<DeviceMemory> d = Analyse(h.s);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_TRUE(d[0].starts_late);
  EXPECT_EQ(d[0].unmatched_frees, 1);
  // The replay ends at 2 MiB - 1 MiB; the segments say 2 MiB: the curve is raised by 1 MiB.
  EXPECT_EQ(d[0].before_history_allocated, kMiB);
  EXPECT_EQ(d[0].curve.back().allocated, 2 * kMiB);
  EXPECT_EQ(d[0].end_reserved, 4 * kMiB);
}

TEST(SnapshotAnalysis, TheWindowKeepsItsOwnPeak) {
  History h;
  h.Segment(kBase, 64 * kMiB);
  h.Alloc(kBase, 16 * kMiB, "early");
  h.Free(kBase, 16 * kMiB, "early");
  const int64_t cut = h.t - 101;
  h.Alloc(kBase, 4 * kMiB, "late");
  SnapshotOptions o;
  o.from_us = cut + 1;
  std::vector<DeviceMemory> d = Analyse(h.s, o);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].peak_allocated, 4 * kMiB);
  EXPECT_EQ(d[0].events, 1);
}

TEST(SnapshotAnalysis, StepNames) {
  EXPECT_TRUE(IsStepName("ProfilerStep#12"));
  EXPECT_TRUE(IsStepName("step 3"));
  EXPECT_TRUE(IsStepName("train_step_7"));
  EXPECT_FALSE(IsStepName("stepper"));
  EXPECT_FALSE(IsStepName("optimizer.step"));
}

TEST(SnapshotAnalysis, SectionsNameThePeakAndMemoryViz) {
  History h;
  h.Segment(kBase, 8 * kMiB);
  h.Alloc(kBase, 3 * kMiB, "weights");
  const report::Report r = SectionsOf(h);
  const report::Section* s = r.FindSection("snapshot");
  ASSERT_NE(s, nullptr);
  const report::Table* t = s->FindTable("snapshot_devices");
  ASSERT_NE(t, nullptr);
  ASSERT_EQ(t->rows.size(), 1u);
  EXPECT_EQ(std::get<int64_t>(t->rows[0][t->ColumnIndex("peak_allocated_bytes")]), 3 * kMiB);
  bool viz = false;
  for (const std::string& n : s->notes)
    viz |= n.find("pytorch.org/memory_viz") != std::string::npos;
  EXPECT_TRUE(viz);
  const report::Section* timeline = r.FindSection("snapshot_timeline");
  ASSERT_NE(timeline, nullptr);
  ASSERT_EQ(timeline->tables.front().charts.size(), 1u);
  EXPECT_TRUE(timeline->tables.front().charts[0].mark_peak);
}

// Allocations without the segments that hold them: the allocated peak above the reserved one is
// impossible, so the section says the history lacks its segments.
TEST(SnapshotAnalysis, AnAllocatedPeakAboveTheReservedPeakIsFlagged) {
  History h;
  h.Segment(kBase, 2 * kMiB);
  h.Alloc(kBase, 2 * kMiB, "weights");
  h.Alloc(kBase + 4 * kMiB, 6 * kMiB, "activation");  // in a segment the history never saw
  const report::Report r = SectionsOf(h);
  const report::Section* s = r.FindSection("snapshot");
  ASSERT_NE(s, nullptr);
  ASSERT_FALSE(s->findings.empty());
  EXPECT_NE(s->findings[0].text.find("the allocated peak (8.00 MiB) is above the reserved peak "
                                     "(2.00 MiB), which cannot be"),
            std::string::npos)
      << s->findings[0].text;
  // A history whose segments hold its blocks says nothing of the kind.
  History ok;
  ok.Segment(kBase, 8 * kMiB);
  ok.Alloc(kBase, 3 * kMiB, "weights");
  EXPECT_TRUE(SectionsOf(ok).FindSection("snapshot")->findings.empty());
}

}  // namespace
}  // namespace trainprof::snapshot
