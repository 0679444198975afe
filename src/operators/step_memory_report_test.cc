// The per-step CUDA memory and activation sections on hand-made input.
#include "operators/step_memory_report.h"

#include <gtest/gtest.h>

#include "history/key_figures.h"

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

}  // namespace
}  // namespace trainprof::torchlib
