#include "analysis/kernel_class.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "analysis/hta/hta.h"
#include "analysis/intervals.h"

namespace trainprof::analysis {
namespace {

TEST(KernelClass, CommunicationInEveryNaming) {
  for (const char* n :
       {"ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)",
        "ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
        "void ncclDevKernel_Generic_4(ncclDevComm*, unsigned long, ncclWork*)",
        "mscclKernel_Sum_float_LL", "rcclGenericKernel", "hcclAllReduce",
        "void c10d::symmetric_memory::multimem_all_reduce_kernel<16>(x)",
        "void c10d::symmetric_memory::one_shot_all_reduce_kernel<float, 8>(x)",
        "void c10d::symmetric_memory::two_shot_all_reduce_kernel<8>(x)",
        "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(x)",
        "void deep_ep::intranode::dispatch<8, 768>(x)", "nvshmemi_transfer_rma_kernel",
        // DeepSeek-V3's training trace: its DeepEP build's namespace.
        "void dpsk::ep::internode::combine<(int)8, (int)256>(x)",
        "void dpsk::ep::internode::dispatch<false, 8>(x)",
        "void dpsk::ep::internode::notify_dispatch<8>(x)",
        "void dpsk::ep::intranode::cached_notify_combine<8>(x)",
        "void pplx::a2a_dispatch_kernel<256>(x)", "void uccl::ep::dispatch_kernel(x)",
        "void mscclpp::allreduce8<float>(x)"})
    EXPECT_TRUE(IsCommunicationKernel(n)) << n;
  for (const char* n :
       {"void at::native::vectorized_elementwise_kernel<4>", "ampere_sgemm_128x64_nn",
        "Memcpy DtoD (Device -> Device)", "void dpsk::attention::flash_fwd<128>(x)",
        "void moe_dispatch_kernel(x)", "fused_moe_kernel", "void combine_kernel<float>(x)"})
    EXPECT_FALSE(IsCommunicationKernel(n)) << n;
}

}  // namespace
}  // namespace trainprof::analysis

namespace trainprof::analysis {
namespace {

TEST(KernelClass, HtaRuleMissesDemangledNcclNamesWeCatch) {
  const char* demangled = "void ncclDevKernel_Generic_4(ncclDevComm*, unsigned long, ncclWork*)";
  EXPECT_EQ(HtaKernelType(demangled), static_cast<int>(KernelType::kComputation));
  EXPECT_EQ(ClassifyGpuEvent(trace::EventKind::kKernel, demangled), KernelType::kCommunication);
  EXPECT_EQ(HtaKernelType("ncclKernel_AllReduce_RING_LL_Sum_float"),
            static_cast<int>(KernelType::kCommunication));
  EXPECT_EQ(HtaKernelType("Memcpy HtoD (Pinned -> Device)"), static_cast<int>(KernelType::kMemory));
  EXPECT_EQ(HtaKernelType("Context Sync"), -1);  // HTA's OTHER
  EXPECT_EQ(ClassifyGpuEvent(trace::EventKind::kMemset, "Memset (Device)"), KernelType::kMemory);
}

// Every matrix-core rule with a name it must match and a near miss it must not: its pattern
// inside a longer word, or without the rule's second part.
TEST(KernelClass, EveryMatrixCoreRuleMatchesByToken) {
  const std::vector<std::pair<const char*, const char*>> yes = {
      {"sm90_xmma_gemm_e4m3e4m3_e4m3f32_f32_tn_n", "FP8/FP4 (E4M3, E5M2, E2M1, MX, NVFP4)"},
      {"void cutlass::device_kernel<grouped_gemm_fp8_rowwise>",
       "FP8/FP4 (E4M3, E5M2, E2M1, MX, NVFP4)"},
      {"sm100_xmma_gemm_bf16bf16_bf16f32", "NVIDIA Blackwell (sm_100, tcgen05)"},
      {"nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT", "NVIDIA cuBLAS nvjet (Hopper, Blackwell)"},
      {"void cutlass::device_kernel<wgmma_gemm_kernel>", "NVIDIA Hopper (sm_90, wgmma)"},
      {"ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_nn", "NVIDIA Ampere / Ada (sm_80, mma.sync)"},
      {"volta_h884gemm_64x64_ldg8_nn", "NVIDIA Volta / Turing (hmma)"},
      {"void cutlass::Kernel<cutlass_tensorop_h1688gemm>", "NVIDIA Volta / Turing (hmma)"},
      {"implicit_gemm_tc_fprop", "NVIDIA CUTLASS / cuDNN Tensor Core"},
      {"Cijk_Alik_Bljk_BBS_BH_MT256x192x64_MI16x16x1_SN", "AMD Tensile / hipBLASLt MFMA"},
      {"igemm_fwd_gtcx_nhwc_bf16_bx0_ex1", "AMD MIOpen / composable kernel XDLops"},
      {"ck_tile::kentry<fmha_fwd_kernel>", "AMD composable kernel (ck_tile)"},
      {"aiter::gemm_a8w8_bpreshuffle", "AMD aiter"},
      {"kernel_mfma_f32_32x32x8bf16", "AMD MFMA"},
      {"flash_fwd_splitkv_kernel", "Fused attention (flash, fmha)"},
      {"_attn_fwd", "Triton dot (attention, matmul)"},
      {"fused_moe_kernel", "Triton dot (attention, matmul)"},
  };
  for (const auto& [name, family] : yes) EXPECT_EQ(MatrixCoreFamily(name), family) << name;
  for (const char* name : {
           "void fp8_quantize_kernel<float>(x)",    // fp8, no GEMM
           "summary_reduce_kernel",                 // "umma" inside a word
           "xnvjet_copy",                           // "nvjet" inside a word
           "void at::native::nowgmma_copy<float>",  // "wgmma" inside a word
           "SubTensorOpWithCastTensor1d",           // "tensorop" inside "SubTensorOp"
           "SubTensorOpWithScalar1d",
           "Cijk_Alik_Bljk_SB_MT64x64x8_SN_sgemm_",  // Tensile without matrix instructions
           "mygtcxs_copy",                           // "gtcx" inside a word
           "ck_tile::kentry<layernorm_kernel>",      // ck_tile, neither fmha nor GEMM
           "aiter::rmsnorm_kernel",                  // aiter, neither GEMM, fmha nor MLA
           "premfma_pack",                           // "mfma" inside a word
           "nonflash_fwd_copy",                      // "flash_fwd" inside a word
       })
    EXPECT_EQ(MatrixCoreFamily(name), "") << name;
}

TEST(KernelClass, LaunchCalls) {
  for (bool compat : {false, true}) {
    EXPECT_TRUE(IsLaunchCallName("cudaLaunchKernel", compat));
    EXPECT_TRUE(IsLaunchCallName("runFunction - job_prep_and_submit_for_execution", compat));
    EXPECT_FALSE(IsLaunchCallName("runFunction", compat));
    EXPECT_FALSE(IsLaunchCallName("cudaStreamSynchronize", compat));
  }
  EXPECT_TRUE(IsLaunchCallName("hipLaunchKernel", false));
  EXPECT_FALSE(IsLaunchCallName("hipLaunchKernel", true));  // HTA 0.6.1's launch stats
}

TEST(KernelClass, TensorCoresAndOps) {
  EXPECT_TRUE(
      UsesTensorCores("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_16x6_nn_align4>"));
  EXPECT_TRUE(UsesTensorCores("ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn"));
  EXPECT_TRUE(UsesTensorCores("sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64"));
  EXPECT_FALSE(UsesTensorCores("ampere_sgemm_128x64_nn"));
  EXPECT_FALSE(UsesTensorCores("void at::native::vectorized_elementwise_kernel<4>"));
  // Issue 53: an FP8 grouped GEMM runs on Tensor Cores; MIOpen's SubTensorOp kernels do not.
  EXPECT_TRUE(UsesTensorCores(
      "void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::"
      "GroupProblemShape<cute::tuple<int, int, int>>, grouped_gemm_fp8_rowwise, "
      "GemmKernel>>(x)"));
  EXPECT_FALSE(UsesTensorCores("SubTensorOpWithCastTensor1d"));
  EXPECT_FALSE(UsesTensorCores("SubTensorOpWithScalar1d"));
  EXPECT_FALSE(UsesTensorCores("void fp8_quantize_kernel<float>(x)"));  // fp8, but no GEMM
  EXPECT_TRUE(UsesTensorCores("cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_32x6_tn"));
  EXPECT_TRUE(IsDataLoaderOp("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"));
  EXPECT_TRUE(IsDataLoaderOp("[_TrainingEpochLoop].train_dataloader_next"));
  EXPECT_FALSE(IsDataLoaderOp("aten::mm"));
  EXPECT_TRUE(IsCommunicationOp("nccl:all_reduce"));
  EXPECT_TRUE(IsCommunicationOp("c10d::allreduce_"));
  EXPECT_FALSE(IsCommunicationOp("aten::add"));
}

// One real kernel name per family (from PyTorch 2.x traces on V100 to B200 and MI210 to
// MI355X, and the libraries' own naming), and the family it must land in.
TEST(KernelClass, MatrixCoreFamilies) {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {"volta_h884gemm_64x64_ldg8_nn", "NVIDIA Volta / Turing (hmma)"},
      {"void cutlass::Kernel2<cutlass_75_tensorop_bf16_s1688gemm_bf16_128x128_nn_align1>(x)",
       "NVIDIA Volta / Turing (hmma)"},
      {"ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn",
       "NVIDIA Ampere / Ada (sm_80, mma.sync)"},
      {"void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn>(x)",
       "NVIDIA Ampere / Ada (sm_80, mma.sync)"},
      {"sm80_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x16",
       "NVIDIA Ampere / Ada (sm_80, mma.sync)"},
      {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64_warpgroupsize1x1x1",
       "NVIDIA Hopper (sm_90, wgmma)"},
      {"void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<sm90_gmma_ss>>(x)",
       "NVIDIA Hopper (sm_90, wgmma)"},
      {"nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NTN", "NVIDIA cuBLAS nvjet (Hopper, Blackwell)"},
      {"sm100_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize256x128x64_cga2x1x1",
       "NVIDIA Blackwell (sm_100, tcgen05)"},
      {"bmm_MxE4m3_MxE2m1MxE4m3_Fp32_t128x64x256_s3_et64x64_m128x64x32_cga1x1x1_16dp256b",
       "FP8/FP4 (E4M3, E5M2, E2M1, MX, NVFP4)"},
      {"void cutlass__5x_cudnn::Kernel<cutlass_tensorop_bf16_s16816fprop_optimized_bf16>(x)",
       "NVIDIA Ampere / Ada (sm_80, mma.sync)"},
      {"void xmma_cudnn::gemm::kernel<xmma_cudnn::implicit_gemm::fprop::Kernel_traits>(x)",
       "NVIDIA CUTLASS / cuDNN Tensor Core"},
      {"void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64>>(x)",
       "Fused attention (flash, fmha)"},
      {"fmha_cutlassF_bf16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel)",
       "NVIDIA Ampere / Ada (sm_80, mma.sync)"},
      {"Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x192x64_MI16x16x1_SN_LDSB1_AFC1",
       "AMD Tensile / hipBLASLt MFMA"},
      {"igemm_fwd_gtcx3_nhwc_bf16_bx0_ex1_bt256x64x8_wt64x16x4_ws1x1_wr2x2",
       "AMD MIOpen / composable kernel XDLops"},
      {"void ck::kernel_gemm_xdlops_v2r3<ck::GridwiseGemm_k0mk1_k0nk1_mn_xdlops_v2r3>(x)",
       "AMD MIOpen / composable kernel XDLops"},
      {"_ZN7ck_tile6kentryILi2ENS_38FmhaBatchPrefillWithPagedKVCacheKernelINS_40Block",
       "AMD composable kernel (ck_tile)"},
      {"void paged_attention_ll4mi_QKV_mfma16_kernel<0, __hip_bfloat16>(x)", "AMD MFMA"},
      {"attn_fwd", "Triton dot (attention, matmul)"},
      {"kernel_unified_attention_2d", "Triton dot (attention, matmul)"},
      {"_matmul_ogs_NNT_bf16xbf16xmxfp4_128x128x128x1_swiglu",
       "FP8/FP4 (E4M3, E5M2, E2M1, MX, NVFP4)"},
      {"triton_tem_fused_mm_0", "Triton dot (attention, matmul)"},
  };
  for (const auto& [name, family] : cases) EXPECT_EQ(MatrixCoreFamily(name), family) << name;
  // CUDA / vector cores: fp32 SIMT GEMMs, GEMVs, elementwise, norms, Tensile without MFMA.
  for (const char* n :
       {"ampere_sgemm_128x64_nn", "volta_sgemm_64x64_nn",
        "std::enable_if<!(false), void>::type internal::gemvx::kernel<int>(x)",
        "void at::native::vectorized_elementwise_kernel<4>(x)",
        "_ZN7ck_tile6kentryILi1ENS_12Rmsnorm2dFwdINS_27Rmsnorm2dFwdPipeline",
        "_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi256E", "Cijk_Ailk_Bljk_SB_MT64x64x8_SE_K1",
        "triton_poi_fused_add_0", "void vllm::reshape_and_cache_flash_kernel<__hip_bfloat16>(x)",
        "_finalize_matmul_scatter_bf16", "batched_transpose_16x64_half"})
    EXPECT_EQ(MatrixCoreFamily(n), "") << n;
}

// Issue 69: the math unit and input type in the name decide, not "xmma" or "cutlass" alone.
TEST(KernelClass, SimtNearMisses) {
  // cuBLAS's fp32 GEMM on the CUDA cores: "xmma" in the name, "ffma" (fp32 SIMT) further on.
  EXPECT_FALSE(UsesTensorCores(
      "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x256x8_stage3_warpsize1x4x1_ffma_aligna4_"
      "alignc4_execute_kernel__5x_cublas"));
  EXPECT_FALSE(UsesTensorCores("sm90_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x64x8_ffma"));
  // The same family with TF32 inputs runs on the Tensor Cores.
  EXPECT_TRUE(
      UsesTensorCores("sm80_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x16_stage4_"
                      "warpsize2x2x1_tensor16x8x8"));
  // CUTLASS names the math unit: simt (CUDA cores) against tensorop.
  EXPECT_FALSE(
      UsesTensorCores("void cutlass::Kernel<cutlass_80_simt_sgemm_128x128_8x4_nn_align1>"));
  EXPECT_FALSE(UsesTensorCores("cutlass_80_simt_hgemm_256x128_8x2_tn_align1"));
  // Only CUTLASS's fp32 SIMT GEMM is one TF32 could move: not its fp64 or fp16 ones.
  EXPECT_TRUE(IsSimtGemm("void cutlass::Kernel<cutlass_80_simt_sgemm_128x128_8x4_nn_align1>"));
  EXPECT_FALSE(IsSimtGemm("cutlass_80_simt_dgemm_128x128_8x2_nn_align1"));
  EXPECT_FALSE(IsSimtGemm("cutlass_80_simt_hgemm_256x128_8x2_tn_align1"));
  EXPECT_TRUE(UsesTensorCores("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3>"));
  EXPECT_TRUE(UsesTensorCores("cutlass_80_tensorop_f16_s16816gemm_relu_f16_256x128_32x3_nn"));
  EXPECT_EQ(KernelFamily("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x256x8_ffma_aligna4"),
            "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x256x8_ffma_aligna4");
}

TEST(KernelClass, KernelFamilyIsTheSameAcrossVendors) {
  // The same model's kernels on an H100 and an MI300X.
  EXPECT_EQ(KernelFamily("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_bf16>(x)"),
            KernelFamily("Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT16x16x128_MI16x16x1"));
  EXPECT_EQ(KernelFamily("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64>>(x)"),
            "attention (matrix cores)");
  EXPECT_EQ(KernelFamily("attn_fwd"), "attention (matrix cores)");
  const char* h100 =
      "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, "
      "float>(int, float, c10::BFloat16 const*)";
  EXPECT_EQ(KernelFamily(h100), "vectorized_layer_norm_kernel");
  EXPECT_EQ(KernelFamily("void at::native::vectorized_elementwise_kernel<4, "
                         "at::native::CUDAFunctor_add<c10::BFloat16> >(int, x)"),
            KernelFamily("void at::native::vectorized_elementwise_kernel<8, "
                         "at::native::CUDAFunctor_add<c10::BFloat16> >(int, x)"));
  EXPECT_EQ(KernelFamily("std::enable_if<!(false), void>::type internal::gemvx::kernel<int, "
                         "float>(x)"),
            "kernel");
  EXPECT_EQ(KernelFamily("triton_poi_fused__to_copy_1"), "triton pointwise");
  EXPECT_EQ(KernelFamily("ncclDevKernel_AllReduce_RING_LL(x)"), "communication");
  EXPECT_EQ(KernelFamily("Memcpy HtoD (Pinned -> Device)"), "memcpy");
}

TEST(Intervals, UnionIntersectSubtract) {
  Intervals u = Union({{30, 40}, {0, 10}, {5, 20}, {20, 25}, {50, 50}});
  EXPECT_EQ(u, (Intervals{{0, 25}, {30, 40}}));
  EXPECT_EQ(Length(u), 35);
  EXPECT_EQ(Intersect(u, {{8, 32}, {38, 60}}), (Intervals{{8, 25}, {30, 32}, {38, 40}}));
  EXPECT_EQ(Subtract({{0, 50}}, u), (Intervals{{25, 30}, {40, 50}}));
  EXPECT_EQ(Subtract(u, {{0, 100}}), Intervals{});
  EXPECT_EQ(LengthWithin(u, 20, 35), 10);
  EXPECT_EQ(LengthWithin(u, 100, 200), 0);
  EXPECT_EQ(Within(u, 20, 35), (Intervals{{20, 25}, {30, 35}}));
  EXPECT_EQ(Within(u, 100, 200), Intervals{});
}

// The Into forms replace what their buffer held, and give what the returning forms give.
TEST(Intervals, IntoFormsReplaceTheBuffer) {
  const Intervals u = {{0, 25}, {30, 40}}, v = {{8, 32}, {38, 60}};
  Intervals out = {{1, 2}, {3, 4}, {5, 6}, {7, 8}, {9, 10}};
  IntersectInto(u, v, &out);
  EXPECT_EQ(out, Intersect(u, v));
  SubtractInto(u, v, &out);
  EXPECT_EQ(out, (Intervals{{0, 8}, {32, 38}}));
  WithinInto(u, 20, 35, &out);
  EXPECT_EQ(out, (Intervals{{20, 25}, {30, 35}}));
  WithinInto(u, 100, 200, &out);
  EXPECT_EQ(out, Intervals{});
}

// Big inputs are sorted by radix: the union must be the one of a plain sort and sweep, also
// with equal begins, empty intervals, negative times and begins spanning all 64 bits.
TEST(Intervals, UnionOfManyIsTheSortedSweep) {
  std::mt19937_64 rng(7);
  for (int64_t spread :
       {int64_t{1000}, int64_t{1} << 40, std::numeric_limits<int64_t>::max() / 2}) {
    Intervals v;
    for (int k = 0; k < 5000; ++k) {
      const auto b = static_cast<int64_t>(rng() % static_cast<uint64_t>(spread)) - spread / 2;
      v.push_back({b, b + static_cast<int64_t>(rng() % 50) - 5});  // some empty or reversed
    }
    v.push_back(v[10]);  // an equal begin
    Intervals sorted = v;
    std::sort(sorted.begin(), sorted.end(), [](const Interval& a, const Interval& b) {
      return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    Intervals want;
    for (const Interval& i : sorted) {
      if (i.end <= i.begin) continue;
      if (!want.empty() && i.begin <= want.back().end)
        want.back().end = std::max(want.back().end, i.end);
      else
        want.push_back(i);
    }
    EXPECT_EQ(Union(v), want) << spread;
    Intervals appended;  // merged as they come, in file order and in sorted order
    for (const Interval& i : v) AppendForUnion(appended, i);
    EXPECT_EQ(Union(appended), want) << spread;
    appended.clear();
    for (const Interval& i : sorted) AppendForUnion(appended, i);
    EXPECT_EQ(Union(appended), want) << spread;
    if (spread == 1000) {  // dense: in sorted order the overlaps take one entry, not one each
      EXPECT_LT(appended.size(), sorted.size() / 10);
    }
  }
}

}  // namespace
}  // namespace trainprof::analysis
