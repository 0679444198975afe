// Peak compute per number format and peak memory bandwidth of the GPUs people train and serve
// on, for MFU and the roofline (flops.h): the vendors' dense figures (no sparsity).
//
//   PeakTflops p = PeakFor("NVIDIA H100 80GB HBM3");
//   p.For(Precision::kFp16)  // 989.4 TFLOP/s;  p.hbm_tbps  // 3.35 TB/s
#pragma once

#include <string>
#include <string_view>

namespace trainprof::analysis {

// The number format a matmul runs in, from its inputs' dtype ("float" is fp32, and tf32 when its
// kernels run on Tensor Cores).
enum class Precision { kFp32, kTf32, kFp16, kUnknown, kFp8, kFp4 };
// "fp32", "tf32", "fp16/bf16", "fp8", "fp4", "unknown"
const char* PrecisionName(Precision p);
// A trace's "Input type" string: "float", "c10::BFloat16", "c10::Float8_e4m3fn", ...
Precision PrecisionOf(std::string_view input_type);

// Dense peak TFLOP/s of a GPU per format and its memory bandwidth; 0 where the device has no
// such format (TF32 falls back to fp32, as the hardware does). Unknown GPUs: all 0.
struct PeakTflops {
  std::string gpu;  // the table's name for it ("A100 SXM"), "" when unknown
  double fp32 = 0, tf32 = 0, fp16 = 0, fp8 = 0, fp4 = 0;
  double hbm_tbps = 0;  // memory bandwidth, TB/s (10^12 bytes a second)
  double For(Precision p) const;
};
// By the deviceProperties name ("NVIDIA A100-SXM4-80GB", "AMD Instinct MI300X VF").
PeakTflops PeakFor(std::string_view device_name);

}  // namespace trainprof::analysis
