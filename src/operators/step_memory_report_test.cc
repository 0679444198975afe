// The per-step CUDA memory and activation sections, and the snapshot digest, on hand-made input.
#include "operators/step_memory_report.h"

#include <gtest/gtest.h>

#include "history/key_figures.h"
#include "operators/snapshot_digest.h"

namespace trainprof::torchlib {
namespace {

int64_t IntMetric(const report::Section& s, std::string_view key) {
  const report::Metric* m = s.FindMetric(key);
  EXPECT_NE(m, nullptr) << key;
  return m != nullptr ? std::get<int64_t>(m->value) : -1;
}

TEST(StepMemory, CudaPeaksAreTheLargestStepPeaksAndAKeyFigure) {
  std::vector<CudaMemoryStep> steps = {{0, 100, 300, 512, 512, 100, 300, 0, 0},
                                       {1, 100, 700, 1024, 1024, 100, 650, 2, 0}};
  report::Report r;
  AddCudaMemorySection(steps, r);
  const report::Section* s = r.FindSection("cuda_memory");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(IntMetric(*s, "peak_allocated_bytes"), 700);
  EXPECT_EQ(IntMetric(*s, "peak_reserved_bytes"), 1024);
  EXPECT_EQ(IntMetric(*s, "num_alloc_retries"), 2);
  EXPECT_EQ(s->FindTable("cuda_memory")->rows.size(), 2u);
  ASSERT_EQ(r.diagnostics.size(), 1u);
  EXPECT_EQ(r.diagnostics[0].id, report::DiagnosticId::kCudaAllocRetries);
  EXPECT_DOUBLE_EQ(history::ExtractKeyFigures(r).Get("peak_memory"), 700);
}

TEST(StepMemory, ActivationPeakMedianAndModules) {
  std::vector<ActivationStep> steps = {{5, 300, 3, {{"encoder", 200}, {"head", 100}}},
                                       {6, 100, 1, {{"encoder", 100}}},
                                       {7, 200, 2, {{"encoder", 200}}}};
  report::Report r;
  AddActivationSection(steps, r);
  const report::Section* s = r.FindSection("activation_memory");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(IntMetric(*s, "activation_peak_bytes"), 300);
  EXPECT_EQ(IntMetric(*s, "activation_median_bytes"), 200);
  const report::Table* m = s->FindTable("activation_modules");
  ASSERT_EQ(m->rows.size(), 2u);
  EXPECT_EQ(std::get<std::string>(m->rows[0][0]), "encoder");
  EXPECT_EQ(std::get<int64_t>(m->rows[0][1]), 500 / 3);
  EXPECT_EQ(std::get<int64_t>(m->rows[0][2]), 200);
}

TEST(SnapshotDigest, FragmentationSizeClassesFramesAndOoms) {
  constexpr int64_t kMiB = 1 << 20;
  // Segment A (20 MiB): 8 MiB + 2 MiB allocated, a 10 MiB free block. Segment B (2 MiB, small
  // pool): 512 KiB allocated twice from one stack, the rest free.
  std::vector<SnapshotBlock> b = {
      {0, 0x1000, 20 * kMiB, "large", 8 * kMiB, "active_allocated", "fwd (m.py:3)"},
      {0, 0x1000, 20 * kMiB, "large", 2 * kMiB, "active_allocated", "fwd (m.py:3)"},
      {0, 0x1000, 20 * kMiB, "large", 10 * kMiB, "inactive", ""},
      {0, 0x9000, 2 * kMiB, "small", kMiB / 2, "active_allocated", "opt (o.py:9)"},
      {0, 0x9000, 2 * kMiB, "small", kMiB / 2, "active_allocated", "opt (o.py:9)"},
      {0, 0x9000, 2 * kMiB, "small", kMiB, "inactive", ""}};
  report::Report r;
  AddSnapshotDigest(b, {{0, 64 * kMiB, "big (m.py:7)"}}, "memory_snapshot.pickle", r);
  const report::Section* s = r.FindSection("memory_snapshot");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(IntMetric(*s, "reserved_bytes"), 22 * kMiB);
  EXPECT_EQ(IntMetric(*s, "allocated_bytes"), 11 * kMiB);
  EXPECT_DOUBLE_EQ(std::get<double>(s->FindMetric("fragmentation_pct")->value), 50.0);
  EXPECT_EQ(IntMetric(*s, "largest_free_block_bytes"), 10 * kMiB);
  EXPECT_EQ(IntMetric(*s, "oom_events"), 1);
  const report::Table* seg = s->FindTable("snapshot_segments");
  EXPECT_EQ(std::get<std::string>(seg->rows[0][1]), "0x1000");
  EXPECT_EQ(std::get<int64_t>(seg->rows[0][4]), 10 * kMiB);
  const report::Table* classes = s->FindTable("snapshot_size_classes");
  EXPECT_EQ(std::get<int64_t>(classes->rows[0][1]), 2);  // < 1 MiB
  EXPECT_EQ(std::get<int64_t>(classes->rows[1][1]), 2);  // 1 - 10 MiB: 2 and 8 MiB
  const report::Table* frames = s->FindTable("snapshot_frames");
  EXPECT_EQ(std::get<std::string>(frames->rows[0][0]), "fwd (m.py:3)");
  EXPECT_EQ(std::get<int64_t>(frames->rows[0][1]), 10 * kMiB);
  EXPECT_EQ(std::get<int64_t>(frames->rows[1][2]), 2);
}

}  // namespace
}  // namespace trainprof::torchlib
