// Names of the Nsight Systems export in the words of a Kineto trace, so that the analyses that
// match names (launch calls, memcpy directions, operators) read both formats alike.
//
//   RuntimeName("cudaLaunchKernel_v7000")   // "cudaLaunchKernel"
//   ParseNvtxRange("aten::mm, seq = 4, op_id = 317, sizes = [[2, 3], [3, 4]]")
//       // {.name = "aten::mm", .sizes = "[[2, 3], [3, 4]]", .op = true}
//   MemcpyName(1, 0, 2)                      // "Memcpy HtoD (Pageable -> Device)"
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace trainprof::trace {

// A CUDA API name without the export's version suffix ("_v7000", "_v11030"); a suffix of fewer
// than four digits is the API's own ("cudaStreamGetCaptureInfo_v2") and stays.
std::string_view RuntimeName(std::string_view name);

// An NVTX range's text as torch.autograd.profiler.emit_nvtx() writes it: the operator's name,
// then ", seq = N", ", op_id = N", ", sizes = [[...]]", ", input_op_ids = [...]" as recorded.
struct NvtxRange {
  std::string_view name;   // the text before the first of those fields; all of it when none
  std::string_view sizes;  // the input shapes' text, "" when not recorded
  bool op = false;         // seq or op_id was given: the range is an operator call
};
NvtxRange ParseNvtxRange(std::string_view text);

// Kineto's names for a memcpy of the export's copy kind and memory kinds (ENUM_CUDA_MEMCPY_OPER,
// ENUM_CUDA_MEM_KIND), and for a memset.
std::string MemcpyName(int64_t copy_kind, int64_t src_kind, int64_t dst_kind);
std::string MemsetName(int64_t mem_kind);

}  // namespace trainprof::trace
