#include "analysis/kernel_class.h"

#include <array>

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

bool IsCommunicationKernel(std::string_view name) {
  // NCCL's kernels were "ncclKernel_<Coll>_<Algo>_<Proto>_<Op>_<type>" until 2.12 and are
  // "ncclDevKernel_<Coll>_..." or the generic "ncclDevKernel_Generic_N" since; RCCL keeps NCCL's
  // names, MSCCL adds "mscclKernel_*", Habana's HCCL "hccl*". Demangled names start with "void ".
  if (name.starts_with("void ")) name.remove_prefix(5);
  static constexpr std::array<std::string_view, 4> kLibraries = {"nccl", "rccl", "hccl", "msccl"};
  return base::ContainsAnyNoCase(name, kLibraries);
}

KernelType ClassifyGpuEvent(trace::EventKind kind, std::string_view name) {
  if (kind == trace::EventKind::kMemcpy || kind == trace::EventKind::kMemset)
    return KernelType::kMemory;
  if (IsCommunicationKernel(name)) return KernelType::kCommunication;
  if (name.starts_with("Memcpy") || name.starts_with("Memset")) return KernelType::kMemory;
  return KernelType::kComputation;
}

bool UsesTensorCores(std::string_view n) {
  // Instruction shapes and library kernel families that only exist on Tensor Cores: HMMA shapes
  // in cuBLAS/CUTLASS names (h884, s1688, 16816, ...), "tensorop" CUTLASS kernels, cuDNN's xmma
  // and implicit-GEMM families, Hopper's wgmma / GMMA, AMD's MFMA.
  static constexpr std::array<std::string_view, 19> kPatterns = {"h884",
                                                                 "s884",
                                                                 "h1688",
                                                                 "s1688",
                                                                 "i8816",
                                                                 "16816",
                                                                 "hmma",
                                                                 "tensorop",
                                                                 "xmma",
                                                                 "gmma",
                                                                 "mfma",
                                                                 "tensorcore",
                                                                 "i16832",
                                                                 "s16832",
                                                                 "bf16gemm",
                                                                 "fp16gemm",
                                                                 "implicit_gemm_tc",
                                                                 "dgrad_1x1_stride_2x2",
                                                                 "first_layer_wgrad_kernel"};
  return base::ContainsAnyNoCase(n, kPatterns);
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
  if (n == "cudaLaunchKernel" || n == "cudaLaunchKernelExC" || n == "cudaMemcpyAsync" ||
      n == "cudaMemsetAsync")
    return true;
  if (compat) return false;
  // The driver API (Triton, CUDA graphs' nodes) and AMD's HIP, which HTA 0.6.1 leaves out.
  return n == "cuLaunchKernel" || n == "cuLaunchKernelEx" || n == "cudaGraphLaunch" ||
         n == "hipLaunchKernel" || n == "hipExtLaunchKernel" || n == "hipModuleLaunchKernel" ||
         n == "hipMemcpyAsync" || n == "hipMemsetAsync" || n == "hipGraphLaunch";
}

}  // namespace trainprof::analysis
