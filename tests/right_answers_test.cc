// Sentences a user acts on (issue 69): each scenario is a small generated trace (util/trace_gen.h)
// or a hand-made model with the fault a real profile showed, and asserts what the report says
// about it: fp32 GEMMs on the CUDA cores, a step spent copying, advice for programs without
// PyTorch, legacy exports without memory events, rooflines above 100 %, and idle "gaps" of one
// clock tick.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <variant>
#include <vector>

#include "analysis/analyze.h"
#include "analysis/flops.h"
#include "analysis/rank_parts.h"
#include "trace/kineto/kineto_reader.h"
#include "util/generated_ranks.h"
#include "util/golden.h"
#include "util/trace_gen.h"

namespace trainprof::right_answers_test {
namespace {

using testutil::GenGpuKind;
using testutil::GenGpuOp;
using testutil::GenStep;
using testutil::GenTrace;

constexpr int64_t kUs = 1000;
// cuBLAS's fp32 GEMM on the CUDA cores, as an H100 PyTorch run names it.
const char* kSimtGemm =
    "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x256x8_stage3_warpsize1x4x1_ffma_aligna4_"
    "alignc4_execute_kernel__5x_cublas";
const char* kFlash = "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64>>(x)";
const char* kAdd = "void at::native::vectorized_elementwise_kernel<4>(int)";

GenGpuOp Kernel(const char* name, int64_t start, int64_t dur, int64_t delay = 10 * kUs) {
  return {.name = name, .start_ns = start, .dur_ns = dur, .launch_delay_ns = delay};
}

testutil::AnalysedRanks Analyse(const GenTrace& t) {
  return testutil::AnalyseGeneratedRanks({{t, {.rank = 0}}});
}

std::string AllFindings(const report::Report& r) {
  std::string out;
  if (const report::Section* s = r.FindSection("recommendations"))
    for (const report::Finding& f : s->findings) out += f.text + "\n";
  return out;
}

const report::Finding* FindingOf(const report::Report& r, std::string_view rule) {
  const report::Section* s = r.FindSection("recommendations");
  if (!s) return nullptr;
  for (const report::Finding& f : s->findings)
    if (f.rule == rule) return &f;
  return nullptr;
}

std::string Notes(const report::Section* s) {
  std::string out;
  if (s)
    for (const std::string& n : s->notes) out += n + "\n";
  return out;
}

// Matmuls whose kernels are cuBLAS's fp32 SIMT GEMMs, beside flash attention on the Tensor
// Cores: half the kernel time on each. The finding names the SIMT share and TF32.
TEST(RightAnswers, Fp32SimtGemmsGetTf32Advice) {
  GenStep s{.host_dur_ns = 1000 * kUs};
  s.cpu_ops.push_back({.name = "aten::mm", .start_ns = 20 * kUs, .dur_ns = 300 * kUs});
  s.cpu_ops.push_back(
      {.name = "aten::_flash_attention_forward", .start_ns = 400 * kUs, .dur_ns = 300 * kUs});
  s.gpu_ops.push_back(Kernel(kSimtGemm, 100 * kUs, 400 * kUs));
  s.gpu_ops.push_back(Kernel(kFlash, 500 * kUs, 400 * kUs));
  GenTrace t;
  t.steps = {s, s, s};
  const testutil::AnalysedRanks r = Analyse(t);
  ASSERT_EQ(r.an.size(), 1u);
  ASSERT_EQ(r.an[0].tables->gpus.size(), 1u);
  EXPECT_DOUBLE_EQ(r.an[0].tables->gpus[0].tensor_core_pct, 50.0);
  EXPECT_DOUBLE_EQ(r.an[0].tables->gpus[0].simt_gemm_pct, 50.0);
  const report::Finding* f = FindingOf(r.report, "tensor_cores");
  ASSERT_NE(f, nullptr) << AllFindings(r.report);
  EXPECT_NE(f->text.find("50.0% of its kernel time in fp32 GEMMs on the CUDA cores"),
            std::string::npos)
      << f->text;
  EXPECT_NE(f->text.find("set_float32_matmul_precision"), std::string::npos) << f->text;
}

// The same GEMMs on Tensor Cores (TF32 inputs): no advice.
TEST(RightAnswers, Tf32GemmsGetNoTensorCoreAdvice) {
  GenStep s{.host_dur_ns = 1000 * kUs};
  s.cpu_ops.push_back({.name = "aten::mm", .start_ns = 20 * kUs, .dur_ns = 300 * kUs});
  s.gpu_ops.push_back(
      Kernel("sm80_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x16", 100 * kUs, 800 * kUs));
  GenTrace t;
  t.steps = {s, s, s};
  const testutil::AnalysedRanks r = Analyse(t);
  EXPECT_DOUBLE_EQ(r.an.at(0).tables->gpus.at(0).tensor_core_pct, 100.0);
  EXPECT_EQ(FindingOf(r.report, "tensor_cores"), nullptr) << AllFindings(r.report);
}

// 900 of each 1,000 µs step is one pageable host-to-device copy; the only kernel takes 20 µs.
// The copies are named as the cause, with direction, bytes, bandwidth and pageable share.
TEST(RightAnswers, AStepSpentCopyingSaysSo) {
  GenStep s{.host_dur_ns = 1000 * kUs};
  s.cpu_ops.push_back({.name = "aten::copy_", .start_ns = 10 * kUs, .dur_ns = 950 * kUs});
  s.gpu_ops.push_back({.kind = GenGpuKind::kMemcpy,
                       .name = "Memcpy HtoD (Pageable -> Device)",
                       .start_ns = 30 * kUs,
                       .dur_ns = 900 * kUs,
                       .launch_delay_ns = 10 * kUs,
                       .bytes = int64_t{24} << 20});
  s.gpu_ops.push_back(Kernel(kAdd, 940 * kUs, 20 * kUs, 5 * kUs));
  GenTrace t;
  t.steps = {s, s, s};
  const testutil::AnalysedRanks r = Analyse(t);
  const report::Finding* f = FindingOf(r.report, "copies");
  ASSERT_NE(f, nullptr) << AllFindings(r.report);
  EXPECT_NE(f->text.find("90.0% of the step is memory copies"), std::string::npos) << f->text;
  EXPECT_NE(f->text.find("0.9 of 1.0 ms per step; over the trace HtoD: 3 copies, 2.7 ms, 72.0 MiB "
                         "at 26.0 GiB/s"),
            std::string::npos)
      << f->text;
  EXPECT_NE(f->text.find("100% of the time pageable"), std::string::npos) << f->text;
  EXPECT_NE(f->text.find("pin_memory=True"), std::string::npos) << f->text;
  EXPECT_NE(f->text.find("non_blocking=True"), std::string::npos) << f->text;
  // It leads: it is a cause with the time it costs, and low utilization follows from it.
  const report::Section* rec = r.report.FindSection("recommendations");
  ASSERT_NE(rec, nullptr);
  EXPECT_EQ(rec->findings.front().rule, "copies") << AllFindings(r.report);
}

// A CUDA program without PyTorch (an Nsight export of an HPC code): host work between short
// kernels. The advice names the program's own CPU work and Nsight's tools, no PyTorch API.
TEST(RightAnswers, ProgramsWithoutPyTorchGetNativeAdvice) {
  trace::TraceModel m;
  m.source = "nsys";
  m.tracks = {{.pid = 1, .tid = 1}, {.pid = 0, .tid = 7, .device = 0, .stream = 7}};
  for (int64_t k = 0; k < 200; ++k) {
    const int64_t t0 = k * 100 * kUs;
    m.Add(trace::EventKind::kUserAnnotation, "timestep", t0, 95 * kUs, 0);
    const size_t call =
        m.Add(trace::EventKind::kRuntime, "cudaLaunchKernel", t0 + 80 * kUs, 6 * kUs, 0);
    m.correlation.Set(call, k + 1);
    const size_t kern =
        m.Add(trace::EventKind::kKernel, "advec_cell_kernel", t0 + 90 * kUs, 3 * kUs, 1);
    m.correlation.Set(kern, k + 1);
  }
  m.LinkLaunches();
  EXPECT_FALSE(analysis::ProfilesPyTorch(m));
  std::vector<trace::TraceModel> models;
  models.push_back(std::move(m));
  const report::Report r =
      analysis::BuildAnalyzeReport(models, analysis::AnalyzeAll(models, {}), {}, "t");
  std::string text = AllFindings(r);
  for (const report::Section& s : r.sections) text += Notes(&s);
  ASSERT_FALSE(AllFindings(r).empty());
  for (const char* torch_only : {"torch.compile", "with_stack", "DataLoader", "nn.Module ranges",
                                 "training loop", "emit_nvtx"})
    EXPECT_EQ(text.find(torch_only), std::string::npos) << torch_only << " in:\n" << text;
  EXPECT_NE(AllFindings(r).find("the program's own CPU work"), std::string::npos) << text;
}

TEST(RightAnswers, PyTorchIsToldByItsRanges) {
  trace::TraceModel m;
  m.source = "nsys";
  m.tracks = {{.pid = 1, .tid = 1}};
  m.Add(trace::EventKind::kUserAnnotation, "aten::mm, op_id = 3", 0, 10, 0);
  EXPECT_TRUE(analysis::ProfilesPyTorch(m));
  trace::TraceModel k;  // any PyTorch profiler (Kineto) trace
  EXPECT_TRUE(analysis::ProfilesPyTorch(k));
}

// torch 1.13 without Kineto, recorded with profile_memory=True and with_stack=True: its export
// (a bare array under "CPU functions", as python3-torch writes it) has no memory events, and
// the memory view says why instead of asking for profile_memory=True.
TEST(RightAnswers, LegacyExportsSayWhatTheyLack) {
  const std::string dir = testutil::FreshTempDir(), path = dir + "/legacy.json";
  std::ofstream(path)
      << R"([{"name": "aten::randn", "ph": "X", "ts": 1040, "dur": 9536, "tid": 1, )"
         R"("pid": "CPU functions", "args": {}}, )"
         R"({"name": "aten::mm", "ph": "X", "ts": 11650, "dur": 5138, "tid": 1, )"
         R"("pid": "CPU functions", "args": {}}])";
  StatusOr<trace::TraceModel> m = trace::ReadTraceFile(path, {});
  ASSERT_TRUE(m.ok()) << m.status().message();
  std::vector<trace::TraceModel> models;
  models.push_back(std::move(*m));
  const report::Report r =
      analysis::BuildAnalyzeReport(models, analysis::AnalyzeAll(models, {}), {}, dir);
  const std::string notes = Notes(r.FindSection("memory"));
  EXPECT_NE(notes.find("legacy profiler"), std::string::npos) << notes;
  EXPECT_NE(notes.find("no memory events even when recorded with profile_memory=True"),
            std::string::npos)
      << notes;
  EXPECT_EQ(notes.find("record with profile_memory=True"), std::string::npos) << notes;
}

// Three elementwise shapes on an A100 (2.039 TB/s): one well under its roofline, one timed in
// 2 µs calls far above it, one of 48 MiB a call (L2-sized) a little above it. The two above
// 100 % leave their cell empty and are named in a note with their likely cause.
TEST(RightAnswers, AboveTheRooflineIsFlaggedNotPrinted) {
  const std::string f32 = R"("float")";
  auto op = [&](const char* name, int64_t start, int64_t dur, int n) {
    const std::string d = "[" + std::to_string(n) + ", " + std::to_string(n) + "]";
    return testutil::GenCpuOp{.name = name,
                              .start_ns = start,
                              .dur_ns = dur,
                              .input_dims = "[" + d + ", " + d + "]",
                              .input_types = "[" + f32 + ", " + f32 + "]"};
  };
  GenStep s{.host_dur_ns = 1000 * kUs};
  s.cpu_ops.push_back(op("aten::add", 100 * kUs, 100 * kUs, 1024));
  s.gpu_ops.push_back(Kernel(kAdd, 150 * kUs, 20 * kUs));
  s.cpu_ops.push_back(op("aten::mul", 300 * kUs, 100 * kUs, 2048));
  s.gpu_ops.push_back(Kernel(kAdd, 350 * kUs, 2 * kUs));
  s.cpu_ops.push_back(op("aten::sub", 500 * kUs, 100 * kUs, 2048));
  s.gpu_ops.push_back(Kernel(kAdd, 550 * kUs, 20 * kUs));
  GenTrace t;
  t.steps = {s, s};
  const testutil::AnalysedRanks r = Analyse(t);
  const report::Section* sec = r.report.FindSection("roofline");
  ASSERT_NE(sec, nullptr);
  const report::Table* tab = sec->FindTable("roofline");
  ASSERT_NE(tab, nullptr);
  const size_t op_col = tab->ColumnIndex("operator"), pct_col = tab->ColumnIndex("roofline_pct");
  int above = 0, below = 0;
  for (const analysis::ShapeRow& row : r.an[0].lists->flops_shapes) {
    const analysis::RooflinePoint p = analysis::Roofline(row, r.an[0].tables->flops.peak);
    ASSERT_TRUE(p.known) << row.name;
    for (const auto& cells : tab->rows) {
      if (std::get<std::string>(cells[op_col]) != row.name) continue;
      EXPECT_EQ(std::holds_alternative<std::monostate>(cells[pct_col]), p.pct > 100)
          << row.name << " " << p.pct;
    }
    (p.pct > 100 ? above : below)++;
  }
  EXPECT_EQ(above, 2);
  EXPECT_EQ(below, 1);
  const std::string notes = Notes(sec);
  EXPECT_NE(notes.find("2 rows would sit above 100% of the roofline"), std::string::npos) << notes;
  EXPECT_NE(notes.find("aten::mul [[2048, 2048], [2048, 2048]] (rank 0): "), std::string::npos)
      << notes;
  EXPECT_NE(notes.find("likely timer resolution (2.0 µs a call"), std::string::npos) << notes;
  EXPECT_NE(notes.find("likely caching (48.0 MiB a call"), std::string::npos) << notes;
}

// Kernels 1 ns apart (Kineto's rounding of adjacent kernels at nanosecond resolution) leave no
// idle gap; a 2 µs one does.
TEST(RightAnswers, GapsOfOneTickAreNoGaps) {
  GenStep s{.host_dur_ns = 1000 * kUs};
  s.cpu_ops.push_back({.name = "aten::add", .start_ns = 10 * kUs, .dur_ns = 900 * kUs});
  s.gpu_ops.push_back(Kernel(kAdd, 100 * kUs, 300 * kUs));
  s.gpu_ops.push_back(Kernel(kAdd, 400 * kUs + 1, 300 * kUs, 200 * kUs));
  s.gpu_ops.push_back(Kernel(kAdd, 702 * kUs + 1, 100 * kUs, 200 * kUs));
  GenTrace t;
  t.steps = {s, s};
  const testutil::AnalysedRanks r = Analyse(t);
  const analysis::IdleCauses& idle = r.an.at(0).tables->idle;
  ASSERT_FALSE(idle.largest.empty());
  for (const analysis::IdleGap& g : idle.largest) EXPECT_GT(g.dur_ns(), 1) << g.begin_ns;
  EXPECT_TRUE(std::ranges::any_of(
      idle.largest, [](const analysis::IdleGap& g) { return g.dur_ns() == 2 * kUs; }));
}

}  // namespace
}  // namespace trainprof::right_answers_test
