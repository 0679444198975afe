// AMD TraceLens's figures on the shared PyTorch 2.x traces (../shared/data/traces/modern/, the
// same three models on an H100 and an MI300X), kept in tests/data/tracelens/ by
// scripts/tracelens-oracle.sh: the GPU time per operator category within 2 points where both
// tools define the category alike, and each GEMM shape's TFLOP/s within 3 %.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "analysis/analyze.h"
#include "trace/trace_files.h"
#include "util/golden.h"

namespace trainprof::analysis {
namespace {

const std::string kModern = std::string(TRAINPROF_SHARED_DIR) + "/data/traces/modern/";

// The fields of a CSV line, quotes removed ("a,\"[[1], [2]]\",3" -> a, [[1], [2]], 3).
std::vector<std::string> Fields(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (char c : line) {
    if (c == '"')
      quoted = !quoted;
    else if (c == ',' && !quoted)
      out.emplace_back();
    else
      out.back() += c;
  }
  return out;
}

std::vector<std::vector<std::string>> ReadCsv(const std::string& name) {
  std::ifstream in(testutil::SourceDir() + "/tests/data/tracelens/" + name);
  EXPECT_TRUE(in.good()) << name;
  std::vector<std::vector<std::string>> rows;
  std::string line;
  std::getline(in, line);  // the header
  while (std::getline(in, line)) rows.push_back(Fields(line));
  return rows;
}

struct Case {
  std::string stem;   // tests/data/tracelens/<stem>.*.csv
  std::string trace;  // under modern/
};

RankAnalysis Analyse(const std::string& trace) {
  auto models = trace::ReadTraceFiles({kModern + trace}, {});
  EXPECT_TRUE(models.ok()) << models.status().message();
  std::vector<RankAnalysis> a = AnalyzeAll(*models, {});
  return std::move(a.front());
}

// TraceLens's category names for the ones both tools define alike. Not compared: its "other"
// (which holds fused attention and softmax, ours attention and normalization) and "NORM_fwd"
// (ours holds softmax too). Its "elementwise" holds the memcpys that aten::copy_ launched,
// which are our memcpy/memset.
const std::map<std::string, std::vector<OpCategory>> kSameCategory = {
    {"GEMM", {OpCategory::kGemm}},
    {"CONV_fwd", {OpCategory::kConvolution}},
    {"elementwise", {OpCategory::kElementwise, OpCategory::kMemcpy}},
    {"reduce", {OpCategory::kReduction}}};

class TraceLensGolden : public ::testing::TestWithParam<Case> {};

TEST_P(TraceLensGolden, CategorySharesAndGemmRates) {
  TRAINPROF_SKIP_WITHOUT_SHARED_TRACES();
  const RankAnalysis a = Analyse(GetParam().trace);
  for (const auto& row : ReadCsv(GetParam().stem + ".categories.csv")) {
    auto it = kSameCategory.find(row[0]);
    if (it == kSameCategory.end()) continue;
    double ours = 0;
    for (OpCategory c : it->second) ours += a.tables->categories.share_pct(c);
    EXPECT_NEAR(ours, std::stod(row[2]), 2.0) << row[0];
  }
  const auto gemms = ReadCsv(GetParam().stem + ".gemm.csv");
  ASSERT_FALSE(gemms.empty());
  for (const auto& row : gemms) {
    const ShapeRow* ours = nullptr;
    for (const ShapeRow& s : a.lists->flops_shapes)
      if (s.name == row[0] && s.dims == row[1]) ours = &s;
    ASSERT_NE(ours, nullptr) << row[0] << " " << row[1];
    const double calls = std::stod(row[2]);
    const double tracelens_tflops = std::stod(row[3]) * calls / std::stod(row[4]) * 1e3;
    EXPECT_EQ(ours->calls, static_cast<int64_t>(calls)) << row[1];
    EXPECT_NEAR(ours->tflops_per_s(), tracelens_tflops, 0.03 * tracelens_tflops) << row[1];
  }
}

// No advice to turn on mixed precision where bf16 already runs on Tensor / matrix cores.
TEST_P(TraceLensGolden, NoPrecisionAdviceOnBf16MatrixCoreTraces) {
  TRAINPROF_SKIP_WITHOUT_SHARED_TRACES();
  const RankAnalysis a = Analyse(GetParam().trace);
  for (const Candidate& c : a.lists->candidates) EXPECT_NE(c.key, "tensor_cores") << c.headline;
  size_t gemm_kernels = 0;
  for (const KernelRow& k : a.lists->kernels) {
    // cuBLAS's GEMVs (a bmm with a dimension of 1) run on CUDA cores by design.
    if (CategoryOfKernel(k.name) != OpCategory::kGemm || k.name.find("gemv") != std::string::npos)
      continue;
    EXPECT_TRUE(k.tensor_cores) << k.name;
    ++gemm_kernels;
  }
  EXPECT_GT(gemm_kernels, 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Modern, TraceLensGolden,
    ::testing::Values(
        Case{"h100_gaunernst", "h100/gaunernst_bert-small-uncased__1016001.json.gz"},
        Case{"mi300_gaunernst", "mi300/gaunernst_bert-small-uncased__1016001.json.gz"},
        Case{"h100_falconsai", "h100/Falconsai_nsfw_image_detection__1016002.json.gz"},
        Case{"mi300_falconsai", "mi300/Falconsai_nsfw_image_detection__1016002.json.gz"},
        Case{"h100_facebook", "h100/facebook_timesformer-base-finetuned-k400__1016002.json.gz"},
        Case{"mi300_facebook", "mi300/facebook_timesformer-base-finetuned-k400__1016002.json.gz"}),
    [](const auto& info) { return info.param.stem; });

// SGLang's Qwen3-8B on an MI300X, decode under HIP graphs and prefill + decode: TraceLens's own
// report (perf_csvs/ beside the traces, its inference mode). Its categories are per parent
// module; summed per category, GEMM and RMSNorm match ours, and its elementwise, RoPE and
// multi_tensor_apply together are our elementwise (ours holds rotary embeddings and foreach).
TEST(TraceLensGolden, InferenceCategoriesMatchTraceLensReport) {
  TRAINPROF_SKIP_WITHOUT_SHARED_TRACES();
  const std::map<std::string, std::vector<std::string>> same = {
      {"GEMM", {"GEMM"}},
      {"normalization", {"RMSNorm"}},
      {"elementwise", {"elementwise", "RoPE_fwd", "multi_tensor_apply"}}};
  for (const char* run : {"sglang_decode/sglang_Qwen3-8B_decode.json.gz",
                          "sglang_prefilldecode/sglang_Qwen3-8B_prefilldecode.json.gz"}) {
    const std::string dir = std::string(run).substr(0, std::string(run).find('/'));
    std::ifstream in(kModern + "inference/" + dir + "/perf_csvs/ops_summary_by_category.csv");
    ASSERT_TRUE(in.good()) << dir;
    std::map<std::string, double> theirs;  // category -> % (summed over parent modules)
    std::string line;
    std::getline(in, line);
    while (std::getline(in, line)) {
      const std::vector<std::string> f = Fields(line);
      theirs[f[0]] += std::stod(f[5]);  // "Percentage (%)"
    }
    const RankAnalysis a = Analyse(std::string("inference/") + run);
    for (const auto& [ours_name, their_names] : same) {
      double t = 0;
      for (const std::string& n : their_names) t += theirs[n];
      double o = 0;
      for (size_t c = 0; c < kNumOpCategories; ++c)
        if (ours_name == OpCategoryName(static_cast<OpCategory>(c)))
          o = a.tables->categories.share_pct(static_cast<OpCategory>(c));
      EXPECT_NEAR(o, t, 2.0) << dir << " " << ours_name;
    }
  }
}

// Inference traces have no ProfilerStep: the window is the GPU's busy span, so the headline
// utilization is TraceLens's busy time over its timeline (gpu_timeline.csv) within a point, and
// a GPU kept 99.8 % busy is not called idle.
TEST(TraceLensGolden, InferenceUtilizationIsTraceLensBusyTime) {
  TRAINPROF_SKIP_WITHOUT_SHARED_TRACES();
  for (const char* run : {"sglang_decode/sglang_Qwen3-8B_decode.json.gz",
                          "sglang_prefilldecode/sglang_Qwen3-8B_prefilldecode.json.gz",
                          "vllm_prefilldecode_piecewise/graph_execution.json.gz"}) {
    const std::string dir = std::string(run).substr(0, std::string(run).find('/'));
    std::ifstream in(kModern + "inference/" + dir + "/perf_csvs/gpu_timeline.csv");
    ASSERT_TRUE(in.good()) << dir;
    double busy_pct = -1;
    for (std::string line; std::getline(in, line);)
      if (line.starts_with("busy_time,")) busy_pct = std::stod(Fields(line)[2]);
    const RankAnalysis a = Analyse(std::string("inference/") + run);
    ASSERT_TRUE(a.steps.gpu_window) << dir;
    ASSERT_EQ(a.tables->gpus.size(), 1u) << dir;
    EXPECT_NEAR(a.tables->gpus.front().utilization_pct, busy_pct, 1.0) << dir;
    if (busy_pct > 90) {
      for (const Candidate& c : a.lists->candidates) EXPECT_NE(c.key, "low_utilization") << dir;
    }
  }
}

// Under HIP graphs every GEMM kernel is launched by hipGraphLaunch; with the capture traces
// beside the runs (capture_traces/), each is credited to the aten::mm / aten::addmm that launched
// it during capture, so each shape's calls and TFLOP/s are TraceLens's (its GEMM.csv, made in its
// inference mode from the same capture traces) within 3 %.
TEST(TraceLensGolden, GraphedGemmsMatchTraceLensThroughTheCaptureTrace) {
  TRAINPROF_SKIP_WITHOUT_SHARED_TRACES();
  for (const char* run : {"sglang_decode/sglang_Qwen3-8B_decode.json.gz",
                          "vllm_prefilldecode_piecewise/graph_execution.json.gz"}) {
    const std::string dir = std::string(run).substr(0, std::string(run).find('/'));
    std::ifstream in(kModern + "inference/" + dir + "/perf_csvs/GEMM.csv");
    ASSERT_TRUE(in.good()) << dir;
    std::string line;
    std::getline(in, line);
    const std::vector<std::string> header = Fields(line);
    auto col = [&](const char* name) {
      return static_cast<size_t>(std::find(header.begin(), header.end(), name) - header.begin());
    };
    const RankAnalysis a = Analyse(std::string("inference/") + run);
    int compared = 0;
    while (std::getline(in, line)) {
      const std::vector<std::string> f = Fields(line);
      const std::string& name = f[col("name")];
      if (!name.starts_with("aten::")) continue;  // the same kernels under vLLM's / aiter's op
      const std::string& dims = f[col("Input Dims_first")];
      const ShapeRow* ours = nullptr;
      for (const ShapeRow& s : a.lists->flops_shapes)
        if (s.name == name && s.dims == dims) ours = &s;
      ASSERT_NE(ours, nullptr) << dir << " " << name << " " << dims;
      const double calls = std::stod(f[col("name_count")]);
      const double tflops = std::stod(f[col("GFLOPS_first")]) * calls /
                            std::stod(f[col("Kernel Time (µs)_sum")]) * 1e3;
      EXPECT_EQ(ours->calls, static_cast<int64_t>(calls)) << dir << " " << dims;
      EXPECT_NEAR(ours->tflops_per_s(), tflops, 0.03 * tflops) << dir << " " << dims;
      ++compared;
    }
    EXPECT_GE(compared, 4) << dir;
  }
}

// Every GPU microsecond of vLLM's piecewise graphs lies under an operator and a module, once each
// graph launch matched its capture: Triton's and aiter's kernels, launched from Python frames
// inside their operators, and the graphs' kernels, under the module around the replay.
TEST(TraceLensGolden, EveryGraphedMicrosecondIsUnderAnOperatorAndAModule) {
  TRAINPROF_SKIP_WITHOUT_SHARED_TRACES();
  const std::string trace =
      kModern + "inference/vllm_prefilldecode_piecewise/graph_execution.json.gz";
  auto models = trace::ReadTraceFiles({trace}, {});
  ASSERT_TRUE(models.ok()) << models.status().message();
  const std::vector<RankAnalysis> an = AnalyzeAll(*models, {});
  const report::Report r = BuildAnalyzeReport(*models, an, {}, trace);
  for (const char* view : {"operator_view", "module_view"}) {
    const report::Metric* m = r.FindSection(view)->FindMetric("device_coverage_pct");
    ASSERT_NE(m, nullptr) << view;
    EXPECT_GE(std::get<double>(m->value), 99.0) << view;
  }
  int64_t mapped = 0;
  for (const auto& d : (*models)[0].diagnostics)
    if (d.id == base::DiagnosticId::kGraphKernelsMapped) mapped = d.count;
  EXPECT_GT(mapped, 0) << "the capture matched";
}

// No training advice without a training loop: on the inference traces no data-loader, batch-size
// or activation-checkpointing advice, and on vLLM's 99.8 % busy GPU no launch-delay or
// utilization finding (a long queue there is a well-fed GPU).
TEST(TraceLensGolden, NoTrainingAdviceOnInferenceTraces) {
  TRAINPROF_SKIP_WITHOUT_SHARED_TRACES();
  for (const char* run : {"sglang_decode/sglang_Qwen3-8B_decode.json.gz",
                          "sglang_prefilldecode/sglang_Qwen3-8B_prefilldecode.json.gz",
                          "vllm_prefilldecode_piecewise/graph_execution.json.gz"}) {
    const RankAnalysis a = Analyse(std::string("inference/") + run);
    for (const Candidate& c : a.lists->candidates) {
      EXPECT_NE(c.key, "dataloader") << run;
      for (const char* word : {"batch size", "checkpointing", "DataLoader"})
        EXPECT_EQ(c.advice.find(word), std::string::npos) << run << ": " << c.advice;
      if (std::string(run).starts_with("vllm")) {
        EXPECT_NE(c.key, "launch_delay") << run;
        EXPECT_NE(c.key, "low_utilization") << run;
      }
    }
  }
}

// A ROCm trace with GPU events only is analysed over its GPU's busy span, not refused.
TEST(TraceLensGolden, GpuOnlyTraceIsAnalysed) {
  TRAINPROF_SKIP_WITHOUT_SHARED_TRACES();
  const RankAnalysis a = Analyse("mi210/gpu_only_trace.json.gz");
  ASSERT_EQ(a.steps.steps.size(), 1u);
  EXPECT_TRUE(a.steps.gpu_window);
  ASSERT_EQ(a.tables->gpus.size(), 1u);
  EXPECT_EQ(a.tables->gpus.front().kernels, 562);
  EXPECT_GT(a.tables->gpus.front().utilization_pct, 0);
  EXPECT_EQ(a.tables->categories.by_kernel_ns,
            a.tables->categories.total_ns);  // no operator above any kernel
}

// The same model does the same GEMM work on both vendors, whatever their kernels are called.
TEST(TraceLensGolden, SameGemmFlopsOnH100AndMi300x) {
  TRAINPROF_SKIP_WITHOUT_SHARED_TRACES();
  for (const char* model : {"gaunernst_bert-small-uncased__1016001.json.gz",
                            "Falconsai_nsfw_image_detection__1016002.json.gz",
                            "facebook_timesformer-base-finetuned-k400__1016002.json.gz"}) {
    auto gemm_flops = [](const RankAnalysis& a) {
      double f = 0;
      for (const ShapeRow& s : a.lists->flops_shapes)
        if (s.category == OpCategory::kGemm) f += s.flops;
      return f;
    };
    const double h100 = gemm_flops(Analyse(std::string("h100/") + model));
    EXPECT_GT(h100, 0) << model;
    EXPECT_DOUBLE_EQ(h100, gemm_flops(Analyse(std::string("mi300/") + model))) << model;
  }
}

}  // namespace
}  // namespace trainprof::analysis
