#include "analysis/categories.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "analysis/analyze.h"

namespace trainprof::analysis {
namespace {

TEST(Categories, ByOperatorName) {
  const std::vector<std::pair<const char*, OpCategory>> cases = {
      {"aten::addmm", OpCategory::kGemm},
      {"aten::mm", OpCategory::kGemm},
      {"aten::_scaled_mm", OpCategory::kGemm},
      {"vllm::rocm_unquantized_gemm", OpCategory::kGemm},
      {"aiter::gemm_a16w16", OpCategory::kGemm},
      {"aten::cudnn_convolution", OpCategory::kConvolution},
      {"aten::convolution_backward", OpCategory::kConvolution},
      {"aten::_flash_attention_forward", OpCategory::kAttention},
      {"aten::_scaled_dot_product_efficient_attention", OpCategory::kAttention},
      {"vllm::unified_attention_with_output", OpCategory::kAttention},
      {"sglang::store_cache", OpCategory::kAttention},
      {"aten::native_layer_norm", OpCategory::kNormalization},
      {"aiter::rmsnorm", OpCategory::kNormalization},
      {"aten::_softmax", OpCategory::kNormalization},
      {"aten::linalg_vector_norm", OpCategory::kReduction},
      {"aten::sum", OpCategory::kReduction},
      {"aten::argmax", OpCategory::kReduction},
      {"aten::add_", OpCategory::kElementwise},
      {"aten::copy_", OpCategory::kElementwise},
      {"aten::gelu", OpCategory::kElementwise},
      {"aten::_foreach_add_", OpCategory::kElementwise},
      {"sgl_kernel::silu_and_mul", OpCategory::kElementwise},
      {"vllm::moe_forward", OpCategory::kMoe},
      {"triton_poi_fused_add_0", OpCategory::kCompiled},
      {"CompiledFunction", OpCategory::kCompiled},
      {"nccl:all_reduce", OpCategory::kCommunication},
      {"aten::index_select", OpCategory::kOther},
      {"aten::cat", OpCategory::kOther},
      {"aten::to_dtype_convert", OpCategory::kOther},  // "conv" in "convert" is no convolution
  };
  for (const auto& [op, c] : cases)
    EXPECT_EQ(OpCategoryName(CategoryOfOp(op)), OpCategoryName(c)) << op;
}

TEST(Categories, ByKernelNameWhenNoOperatorTells) {
  const std::vector<std::pair<const char*, OpCategory>> cases = {
      {"Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x192x64_MI16x16x1", OpCategory::kGemm},
      {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64", OpCategory::kGemm},
      {"igemm_fwd_gtcx3_nhwc_bf16_bx0_ex1_bt256x64x8", OpCategory::kConvolution},
      {"void paged_attention_ll4mi_QKV_mfma16_kernel<0>(x)", OpCategory::kAttention},
      {"kernel_unified_attention_2d", OpCategory::kAttention},
      {"_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi256E", OpCategory::kNormalization},
      {"_topk_forward", OpCategory::kMoe},
      {"_combined_routing_compute", OpCategory::kMoe},
      {"triton_poi_fused_constant_pad_nd_moe_forward_0", OpCategory::kCompiled},
      {"void at::native::reduce_kernel<512, 1>(x)", OpCategory::kReduction},
      {"void at::native::vectorized_elementwise_kernel<4>(x)", OpCategory::kElementwise},
      {"_ZN7sgl_hip10activation18act_and_mul_kernelI14__hip_bfloat16", OpCategory::kElementwise},
      {"ncclDevKernel_AllReduce_RING_LL(x)", OpCategory::kCommunication},
      {"Memcpy HtoD (Pinned -> Device)", OpCategory::kMemcpy},
      {"batched_transpose_16x64_half", OpCategory::kOther},
  };
  for (const auto& [k, c] : cases)
    EXPECT_EQ(OpCategoryName(CategoryOfKernel(k)), OpCategoryName(c)) << k;
}

// The note on GPU time with no operator above it is said when it shows as at least 0.1 %.
TEST(Categories, TheNoOperatorNoteOnlyWhenItShows) {
  auto note_for = [](int64_t orphan_ns) {
    trace::TraceModel m;
    m.tracks = {{.pid = 1, .tid = 1}, {.pid = 0, .tid = 7, .device = 0, .stream = 7}};
    m.Add(trace::EventKind::kCpuOp, "aten::mm", 0, 100, 0);
    const size_t call = m.Add(trace::EventKind::kRuntime, "cudaLaunchKernel", 10, 10, 0);
    m.correlation.Set(call, 1);
    const size_t k = m.Add(trace::EventKind::kKernel, "gemm", 100, 1'000'000, 1);
    m.correlation.Set(k, 1);
    m.Add(trace::EventKind::kKernel, "orphan", 2'000'000, orphan_ns, 1);
    m.LinkLaunches();
    std::vector<trace::TraceModel> models;
    models.push_back(std::move(m));
    const report::Report r = BuildAnalyzeReport(models, AnalyzeAll(models, {}), {}, "t");
    for (const report::Section& s : r.sections)
      if (s.id == "categories")
        for (const std::string& n : s.notes)
          if (n.find("has no operator above it") != std::string::npos) return n;
    return std::string();
  };
  EXPECT_EQ(note_for(500), "");  // 0.05 %
  EXPECT_EQ(note_for(10'000),
            "Rank 0: 1.0% of the GPU time has no operator above it (a GPU-only trace or graph "
            "replays): placed by the kernel's name.");
}

}  // namespace
}  // namespace trainprof::analysis
