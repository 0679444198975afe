// What a GPU event is, by its category and name: communication (NCCL, RCCL, HCCL, MSCCL
// collectives, in every naming in use), memory (memcpy / memset), or computation; and whether a
// kernel runs on Tensor Cores (by the name patterns of cuBLAS, cuDNN, CUTLASS and friends).
#pragma once

#include <string>
#include <string_view>

#include "trace/trace_model.h"

namespace trainprof::analysis {

enum class KernelType { kComputation, kCommunication, kMemory };
const char* KernelTypeName(KernelType t);  // HTA's names: "COMPUTATION", "COMMUNICATION", "MEMORY"

// "ncclKernel_AllReduce_RING_LL_Sum_float", "ncclDevKernel_AllGather_RING_LL",
// "void ncclDevKernel_Generic_4(...)", "rcclKernel...", "mscclKernel_...", "hcclKernel..." -> true.
bool IsCommunicationKernel(std::string_view name);
KernelType ClassifyGpuEvent(trace::EventKind kind, std::string_view name);
// The matrix-core family a kernel's name places it in, by vendor and generation: "NVIDIA Hopper
// (sm_90, wgmma)", "AMD Tensile / hipBLASLt MFMA", "FP8/FP4 (E4M3, ...)", "Fused attention
// (flash, fmha)", ...; "" when the name says it runs on CUDA / vector cores, or says nothing.
// Tensor Cores and AMD's matrix cores (MFMA) alike.
std::string_view MatrixCoreFamily(std::string_view kernel_name);
bool UsesTensorCores(std::string_view kernel_name);  // MatrixCoreFamily is not ""
// A GEMM that names the CUDA cores as its math unit, not a GEMV: cuBLAS's "ampere_sgemm_*" and
// "sm80_xmma_gemm_f32f32_..._ffma_...", CUTLASS's "cutlass_80_simt_sgemm_*" (not its simt dgemm
// or hgemm: fp64 and fp16). TF32 or bf16 would move it to the Tensor Cores.
bool IsSimtGemm(std::string_view kernel_name);
// What a kernel is across vendors, for comparing two devices (diff): "GEMM (matrix cores)",
// "attention (matrix cores)", "communication", "memcpy", or the kernel's own function name
// without namespaces, template arguments and parameters ("vectorized_elementwise_kernel",
// "triton_poi_fused_add_0" as "triton pointwise").
std::string KernelFamily(std::string_view kernel_name);
// CPU ops that run a collective ("nccl:all_reduce", "c10d::allreduce_", "gloo:all_reduce",
// "record_param_comms").
bool IsCommunicationOp(std::string_view name);
// The data loader's CPU ranges: "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__",
// "enumerate(DataPipe)#...", and trainprof's own "*_dataloader_next" / "*.val_next" actions.
bool IsDataLoaderOp(std::string_view name);
// Runtime and driver calls that start GPU work (cudaLaunchKernel, cudaMemcpyAsync, ...; without
// `compat` also the driver API, CUDA graphs and HIP, which HTA 0.6.1 leaves out).
bool IsLaunchCallName(std::string_view name, bool compat);

}  // namespace trainprof::analysis
