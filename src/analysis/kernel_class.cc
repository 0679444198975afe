#include "analysis/kernel_class.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/name_memo.h"
#include "base/text.h"

namespace trainprof::analysis {

const char* KernelTypeName(KernelType t) {
  switch (t) {
    case KernelType::kComputation:
      return "COMPUTATION";
    case KernelType::kCommunication:
      return "COMMUNICATION";
    case KernelType::kMemory:
      return "MEMORY";
  }
  return "COMPUTATION";
}

namespace {

bool ScanForCommunication(std::string_view name) {
  // NCCL's kernels were "ncclKernel_<Coll>_<Algo>_<Proto>_<Op>_<type>" until 2.12 and are
  // "ncclDevKernel_<Coll>_..." or the generic "ncclDevKernel_Generic_N" since; RCCL keeps NCCL's
  // names, MSCCL adds "mscclKernel_*", Habana's HCCL "hccl*". PyTorch's symmetric-memory
  // collectives ("multimem_all_reduce_kernel", "one_shot_all_reduce_kernel",
  // "two_shot_all_reduce_kernel"), vLLM's and SGLang's custom all-reduce ("cross_device_reduce_*"),
  // NVSHMEM, DeepEP's expert-parallel kernels ("deep_ep::intranode::dispatch", and in
  // DeepSeek's own traces "dpsk::ep::internode::combine", "notify_dispatch", "cached_notify"),
  // Perplexity's pplx-kernels ("pplx::") and UCCL's ("uccl") move data between GPUs too
  // (MSCCL++ is "mscclpp"). Demangled names start with "void ".
  if (name.starts_with("void ")) name.remove_prefix(5);
  static constexpr std::array<std::string_view, 14> kLibraries = {"nccl",
                                                                  "rccl",
                                                                  "hccl",
                                                                  "msccl",
                                                                  "multimem_all",
                                                                  "one_shot_all",
                                                                  "two_shot_all",
                                                                  "cross_device_reduce",
                                                                  "nvshmem",
                                                                  "deep_ep",
                                                                  "all_to_all_vdev",
                                                                  "dpsk::ep::",
                                                                  "pplx::",
                                                                  "uccl"};
  return base::ContainsAnyNoCase(name, kLibraries);
}

}  // namespace

bool IsCommunicationKernel(std::string_view name) {
  static base::NameMemo<bool> memo;
  return memo.Get(name, [&] { return ScanForCommunication(name); });
}

KernelType ClassifyGpuEvent(trace::EventKind kind, std::string_view name) {
  if (kind == trace::EventKind::kMemcpy || kind == trace::EventKind::kMemset)
    return KernelType::kMemory;
  if (IsCommunicationKernel(name)) return KernelType::kCommunication;
  if (name.starts_with("Memcpy") || name.starts_with("Memset")) return KernelType::kMemory;
  return KernelType::kComputation;
}

namespace {

// One rule of MatrixCoreFamily: the kernel's lower-cased name holds one of `any` starting at a
// token (StartsToken), and holds `also` anywhere when set. The first rule that matches names
// the family.
struct FamilyRule {
  std::string_view family;
  std::vector<std::string_view> any;
  std::string_view also = {};
};

// Ordered from the most specific: number formats, then each vendor's generations, then library
// families that span generations, then fused attention and Triton's dot kernels.
const std::vector<FamilyRule>& FamilyRules() {
  static const std::vector<FamilyRule> kRules = {
      {"FP8/FP4 (E4M3, E5M2, E2M1, MX, NVFP4)",
       {"e4m3", "e5m2", "e2m1", "mxe4m3", "mxe5m2", "mxe2m1", "mxfp8", "mxfp6", "mxfp4", "mxf8",
        "mxf4", "nvfp4", "fp8gemm", "_fp8_gemm", "f8f6f4"}},
      // CUTLASS's FP8 grouped GEMMs (MoE experts) name the format and the GEMM apart:
      // "cutlass::device_kernel<...grouped_gemm...fp8...GemmKernel>".
      {"FP8/FP4 (E4M3, E5M2, E2M1, MX, NVFP4)", {"fp8"}, "gemm"},
      {"NVIDIA Blackwell (sm_100, tcgen05)",
       {"sm100", "sm_100", "sm101", "sm120", "tcgen05", "umma"}},
      {"NVIDIA cuBLAS nvjet (Hopper, Blackwell)", {"nvjet"}},
      {"NVIDIA Hopper (sm_90, wgmma)", {"sm90", "sm_90", "gmma", "wgmma"}},
      {"NVIDIA Ampere / Ada (sm_80, mma.sync)",
       {"sm80", "sm86", "sm89", "cutlass_80", "16816", "16832", "161616", "ampere_fp16",
        "ampere_bf16", "ampere_h", "tf32"}},
      {"NVIDIA Volta / Turing (hmma)",
       {"h884", "s884", "h1688", "s1688", "i8816", "hmma", "cutlass_75", "cutlass_70", "turing_h",
        "volta_h"}},
      {"NVIDIA CUTLASS / cuDNN Tensor Core",
       {"tensorop", "xmma", "tensorcore", "implicit_gemm_tc", "wmma", "bf16gemm", "fp16gemm",
        "dgrad_1x1_stride_2x2", "first_layer_wgrad_kernel"}},
      {"AMD Tensile / hipBLASLt MFMA", {"cijk_"}, "_mi"},
      {"AMD MIOpen / composable kernel XDLops", {"xdlops", "_xdl", "gtcx"}},
      {"AMD composable kernel (ck_tile)", {"ck_tile"}, "fmha"},
      {"AMD composable kernel (ck_tile)", {"ck_tile"}, "gemm"},
      {"AMD aiter", {"aiter"}, "gemm"},
      {"AMD aiter", {"aiter"}, "fmha"},
      {"AMD aiter", {"aiter"}, "mla"},
      {"AMD MFMA", {"mfma"}},
      {"Fused attention (flash, fmha)",
       {"flash_fwd", "flash_bwd", "flash::", "pytorch_flash", "fmha", "flashattn", "flash_attn"}},
      {"Triton dot (attention, matmul)",
       {"attn_fwd", "attn_bwd", "unified_attention", "_matmul_ogs", "matmul_kernel",
        "triton_tem_fused_mm", "triton_tem_fused_bmm", "triton_tem_fused_addmm", "flex_attention",
        "fused_moe_kernel"}},
  };
  return kRules;
}

// Whether `low[at...]` starts a token: the name's start, after a character that is no letter or
// digit, where letters turn to digits or back ("s16816gemm" holds "16816" and "gemm"), or after
// the "x" of a shape ("128x64", "bf16xmxfp4"). "subtensorop" (MIOpen's elementwise SubTensorOp)
// then holds no "tensorop", "summary" no "umma".
bool IsDigit(char c) { return static_cast<unsigned char>(c - '0') < 10; }
bool IsAlnum(char c) { return IsDigit(c) || static_cast<unsigned char>((c | 0x20) - 'a') < 26; }

bool StartsToken(std::string_view low, size_t at) {
  if (at == 0) return true;
  const char c = low[at - 1], d = low[at];
  if (!IsAlnum(c) || !IsAlnum(d)) return true;
  if (c == 'x' && at >= 2 && IsDigit(low[at - 2])) return true;
  return IsDigit(c) != IsDigit(d);
}

bool HasToken(std::string_view low, std::string_view part) {
  for (size_t at = low.find(part); at != std::string_view::npos; at = low.find(part, at + 1))
    if (StartsToken(low, at)) return true;
  return false;
}

// HasToken for many parts: a lower-cased name's token starts (StartsToken), listed by their
// first character, so that a part is compared only where a token starts with its first
// character. A hundred parts over a kernel name of a few hundred bytes took 60,000 instructions
// as a `find` each, about 1 % of analysing a trace.
class Tokens {
 public:
  explicit Tokens(std::string_view low) : low_(low), next_(low.size(), kEnd) {
    first_.fill(kEnd);
    for (size_t at = low.size(); at-- > 0;) {
      if (!StartsToken(low, at)) continue;
      uint32_t& first = first_[static_cast<unsigned char>(low[at])];
      next_[at] = first;
      first = static_cast<uint32_t>(at);
    }
  }
  // Whether `part` (not empty) occurs starting at a token.
  bool Has(std::string_view part) const {
    for (uint32_t at = first_[static_cast<unsigned char>(part[0])]; at != kEnd; at = next_[at])
      if (low_.substr(at).starts_with(part)) return true;
    return false;
  }

 private:
  static constexpr uint32_t kEnd = UINT32_MAX;
  std::string_view low_;
  std::array<uint32_t, 256> first_;  // each character's first token start
  std::vector<uint32_t> next_;       // a token start's next one of the same character
};

// A math unit or input type that only the matrix cores run: CUTLASS's "tensorop", Volta's
// "hmma" (and the "h884" / "s1688" MMA shapes), Hopper's "wgmma", TF32, and half or narrower
// inputs ("f16", "bf16", "e4m3"; cuBLAS names inputs as "f16f16", CUTLASS as "_bf16_").
bool NamesMatrixMath(std::string_view low) {
  static constexpr std::array<std::string_view, 13> kMath = {
      "tensorop", "hmma", "imma", "wgmma", "gmma",  "tf32", "f16",
      "bf16",     "e4m3", "e5m2", "h884",  "s1688", "16816"};
  for (std::string_view t : kMath)
    if (HasToken(low, t)) return true;
  return false;
}

// Kernels whose names look like a matrix family but run on CUDA / vector cores: every GEMV, and
// fp32 SIMT GEMMs, which name their math unit: cuBLAS's "ampere_sgemm_*" and
// "sm80_xmma_gemm_f32f32_..._ffma_..." (fused fp32 multiply-add), CUTLASS's "cutlass_80_simt_*".
// A name that also names matrix math (a TF32 or half-precision input, "tensorop") is not SIMT.
bool IsSimtGemmLower(std::string_view low) {
  const bool simt = low.find("_sgemm_") != std::string_view::npos || low.starts_with("sgemm") ||
                    HasToken(low, "ffma") || HasToken(low, "simt");
  return simt && !NamesMatrixMath(low) && low.find("gemv") == std::string_view::npos;
}

bool IsSimtMatmul(std::string_view low) {
  return low.find("gemv") != std::string_view::npos || IsSimtGemmLower(low);
}

}  // namespace

namespace {

std::string_view ScanForMatrixCoreFamily(std::string_view name) {
  const std::string low = base::AsciiLower(name);
  if (IsSimtMatmul(low)) return {};
  const Tokens tokens(low);
  for (const FamilyRule& r : FamilyRules()) {
    if (!r.also.empty() && low.find(r.also) == std::string::npos) continue;
    for (std::string_view n : r.any)
      if (tokens.Has(n)) return r.family;
  }
  return {};
}

}  // namespace

std::string_view MatrixCoreFamily(std::string_view name) {
  static base::NameMemo<std::string_view> memo;  // the families are literals
  return memo.Get(name, [&] { return ScanForMatrixCoreFamily(name); });
}

bool UsesTensorCores(std::string_view n) { return !MatrixCoreFamily(n).empty(); }

bool IsSimtGemm(std::string_view kernel_name) {
  static base::NameMemo<bool> memo;
  return memo.Get(kernel_name, [&] {
    const std::string low = base::AsciiLower(kernel_name);
    // CUTLASS's "simt" names the cores, not the type: its dgemm / hgemm are fp64 and fp16,
    // which TF32 cannot help; only its sgemm is fp32.
    if (HasToken(low, "simt") && low.find("sgemm") == std::string::npos) return false;
    return IsSimtGemmLower(low);
  });
}

namespace {

// The function's name in a demangled kernel signature: "void at::native::(anonymous
// namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, ...)" ->
// "vectorized_layer_norm_kernel". Names that are not signatures come back whole.
std::string_view BareFunctionName(std::string_view n) {
  static constexpr std::string_view kAnon = "(anonymous namespace)";
  int angle = 0;
  size_t end = n.size();
  for (size_t i = 0; i < n.size(); ++i) {
    if (n[i] == '<') ++angle;
    if (n[i] == '>' && angle > 0) --angle;
    if (n[i] != '(' || angle != 0) continue;
    if (n.substr(i).starts_with(kAnon)) {
      i += kAnon.size() - 1;
      continue;
    }
    end = i;
    break;
  }
  std::string_view head = n.substr(0, end);
  if (head.ends_with('>')) {  // the function's own template arguments
    int depth = 0;
    for (size_t i = head.size(); i-- > 0;) {
      depth += head[i] == '>' ? 1 : head[i] == '<' ? -1 : 0;
      if (depth == 0) {
        head = head.substr(0, i);
        break;
      }
    }
  }
  if (size_t c = head.rfind("::"); c != std::string_view::npos) head.remove_prefix(c + 2);
  if (size_t sp = head.rfind(' '); sp != std::string_view::npos) head.remove_prefix(sp + 1);
  return head.empty() ? n : head;
}

}  // namespace

std::string KernelFamily(std::string_view name) {
  if (IsCommunicationKernel(name)) return "communication";
  if (name.starts_with("Memcpy")) return "memcpy";
  if (name.starts_with("Memset")) return "memset";
  const std::string_view matrix = MatrixCoreFamily(name);
  if (!matrix.empty()) {
    static constexpr std::array<std::string_view, 5> kAttention = {"attn", "attention", "fmha",
                                                                   "flash", "mla"};
    return base::ContainsAnyNoCase(name, kAttention) ? "attention (matrix cores)"
                                                     : "GEMM / convolution (matrix cores)";
  }
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 4> kTriton = {
      {{"triton_poi_", "triton pointwise"},
       {"triton_red_", "triton reduction"},
       {"triton_per_", "triton persistent reduction"},
       {"triton_tem_", "triton template"}}};
  for (const auto& [prefix, family] : kTriton)
    if (name.starts_with(prefix)) return std::string(family);
  return std::string(BareFunctionName(name));
}

bool IsCommunicationOp(std::string_view name) {
  return name.starts_with("nccl:") || name.starts_with("c10d::") || name.starts_with("gloo:") ||
         name == "record_param_comms" || name.starts_with("[DDP].");
}

bool IsDataLoaderOp(std::string_view name) {
  return name.starts_with("enumerate(DataLoader)#") || name.starts_with("enumerate(DataPipe)#") ||
         name.ends_with("dataloader_next") || name.ends_with(".val_next");
}

bool IsLaunchCallName(std::string_view n, bool compat) {
  // MTIA's launch call, which HTA 0.6.1 counts with CUDA's.
  if (n == "cudaLaunchKernel" || n == "cudaLaunchKernelExC" || n == "cudaMemcpyAsync" ||
      n == "cudaMemsetAsync" || n == "runFunction - job_prep_and_submit_for_execution")
    return true;
  if (compat) return false;
  // The driver API (Triton, CUDA graphs' nodes) and AMD's HIP, which HTA 0.6.1 leaves out.
  return n == "cuLaunchKernel" || n == "cuLaunchKernelEx" || n == "cudaGraphLaunch" ||
         n == "hipLaunchKernel" || n == "hipExtLaunchKernel" || n == "hipModuleLaunchKernel" ||
         n == "hipMemcpyAsync" || n == "hipMemsetAsync" || n == "hipGraphLaunch";
}

}  // namespace trainprof::analysis
