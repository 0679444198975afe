// Operator categories, as AMD's TraceLens splits a trace: each GPU kernel's time goes to the
// innermost CPU operator that launched it ("direct kernel time"), and that operator's category
// (GEMM, convolution, attention, ...) is the kernel's; GPU work with no operator above it (a
// GPU-only trace, a graph replay) is placed by the kernel's own name. Differences from
// TraceLens, on purpose (docs/trace-analysis.md): fused attention is "attention" (TraceLens
// leaves aten::_flash_attention_forward in "other"), softmax is normalization, and
// communication kernels are a category of their own instead of left out.
//
//   CategoryResult c = ComputeCategories(model, tree);
//   c.share_pct(OpCategory::kGemm)  // % of the rank's GPU kernel time
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "analysis/op_tree.h"
#include "trace/trace_model.h"

namespace trainprof::analysis {

enum class OpCategory {
  kGemm,
  kConvolution,
  kAttention,
  kNormalization,
  kElementwise,
  kReduction,
  kMoe,
  kCompiled,
  kCommunication,
  kMemcpy,
  kOther,
};
inline constexpr size_t kNumOpCategories = 11;
// "GEMM", "convolution", "attention", "normalization", "elementwise", "reduction", "MoE",
// "compiled", "communication", "memcpy/memset", "other"
const char* OpCategoryName(OpCategory c);

// By the operator's name ("aten::addmm", "vllm::unified_attention", "aiter::rmsnorm"); kOther
// when the name does not tell.
OpCategory CategoryOfOp(std::string_view op);
// By the kernel's name alone, for GPU work no operator tells; kOther when it does not tell.
OpCategory CategoryOfKernel(std::string_view kernel);

struct CategoryShare {
  int64_t ns = 0;       // direct GPU time of the category's kernels, memcpys and memsets
  int64_t kernels = 0;  // how many
  std::string top_op;   // the operator (or, without one, the kernel) with the most of that time
  int64_t top_ns = 0;
};

struct CategoryResult {
  std::array<CategoryShare, kNumOpCategories> by{};
  int64_t total_ns = 0;      // all GPU work of the trace
  int64_t by_kernel_ns = 0;  // of which placed by the kernel's name (no operator above it)
  double share_pct(OpCategory c) const {
    return total_ns > 0 ? 100.0 * static_cast<double>(by[static_cast<size_t>(c)].ns) /
                              static_cast<double>(total_ns)
                        : 0;
  }
};

CategoryResult ComputeCategories(const trace::TraceModel& m, const OpTree& tree);

}  // namespace trainprof::analysis
