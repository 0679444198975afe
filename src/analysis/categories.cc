#include "analysis/categories.h"

#include <algorithm>
#include <unordered_map>
#include <vector>

#include "analysis/kernel_class.h"
#include "base/name_memo.h"
#include "base/text.h"
#include "trace/graph_capture.h"

namespace trainprof::analysis {

namespace {

bool Has(std::string_view s, std::string_view needle) {
  return s.find(needle) != std::string_view::npos;
}

template <size_t N>
bool HasAny(std::string_view s, const std::array<std::string_view, N>& needles) {
  return std::ranges::any_of(needles, [&](std::string_view n) { return Has(s, n); });
}

template <size_t N>
bool IsOneOf(std::string_view s, const std::array<std::string_view, N>& names) {
  return std::ranges::find(names, s) != names.end();
}

// The operator's own name: "aten::addmm" -> "addmm", "vllm::unified_attention" -> its last part.
std::string_view BaseName(std::string_view op) {
  const size_t c = op.rfind("::");
  return c == std::string_view::npos ? op : op.substr(c + 2);
}

bool IsGemmName(std::string_view base) {
  // clang-format off
  static constexpr std::array<std::string_view, 16> kGemm = {
      "mm", "addmm", "bmm", "baddbmm", "addbmm", "matmul", "linear", "mv", "addmv", "dot",
      "_scaled_mm", "_int_mm", "einsum", "_grouped_mm", "_scaled_grouped_mm",
      "_addmm_activation"};
  // clang-format on
  return IsOneOf(base, kGemm) || Has(base, "gemm") || Has(base, "matmul");
}

bool IsReductionName(std::string_view base) {
  // clang-format off
  static constexpr std::array<std::string_view, 22> kReduce = {
      "sum", "mean", "max", "min", "amax", "amin", "argmax", "argmin", "cumsum", "cumprod",
      "prod", "var", "std", "var_mean", "std_mean", "all", "any", "topk", "sort", "logsumexp",
      "nansum", "linalg_vector_norm"};
  // clang-format on
  return IsOneOf(base, kReduce) || base == "norm";
}

bool IsElementwiseName(std::string_view base) {
  // clang-format off
  static constexpr std::array<std::string_view, 40> kElementwise = {
      "add", "sub", "mul", "div", "neg", "gelu", "silu", "relu", "sigmoid", "tanh", "exp", "log",
      "pow", "sqrt", "rsqrt", "abs", "clamp", "where", "masked_fill", "fill_", "zero_", "copy_",
      "_to_copy", "to", "clone", "dropout", "native_dropout", "erf", "reciprocal", "maximum",
      "minimum", "lerp", "addcmul", "addcdiv", "hardtanh", "leaky_relu", "threshold_backward",
      "gelu_backward", "silu_backward", "sigmoid_backward"};
  // clang-format on
  static constexpr std::array<std::string_view, 6> kFused = {"_foreach_", "rotary",     "rope",
                                                             "and_mul",   "activation", "quant"};
  std::string_view b = base;
  if (b.size() > 1 && b.back() == '_' && b != "fill_" && b != "zero_" && b != "copy_")
    b.remove_suffix(1);  // in-place forms: add_, mul_
  return IsOneOf(b, kElementwise) || HasAny(base, kFused);
}

}  // namespace

const char* OpCategoryName(OpCategory c) {
  static constexpr std::array<const char*, kNumOpCategories> kNames = {
      "GEMM", "convolution", "attention",     "normalization", "elementwise", "reduction",
      "MoE",  "compiled",    "communication", "memcpy/memset", "other"};
  return kNames[static_cast<size_t>(c)];
}

OpCategory CategoryOfOp(std::string_view op) {
  if (IsCommunicationOp(op)) return OpCategory::kCommunication;
  const std::string low = base::AsciiLower(op);
  const std::string_view base = BaseName(low);
  static constexpr std::array<std::string_view, 4> kCompiled = {
      "compiledfunction", "torch-compiled region", "inductor", "compiled_fx"};
  if (low.starts_with("triton") || HasAny(low, kCompiled)) return OpCategory::kCompiled;
  if (Has(base, "moe") || Has(base, "expert")) return OpCategory::kMoe;
  static constexpr std::array<std::string_view, 9> kAttention = {
      "attention", "attn", "flash", "fmha", "sdpa", "paged", "mla", "kv_cache", "and_cache"};
  if (HasAny(base, kAttention) || base == "store_cache") return OpCategory::kAttention;
  if (Has(base, "conv") && !Has(base, "convert")) return OpCategory::kConvolution;
  if (IsGemmName(base)) return OpCategory::kGemm;
  if (IsReductionName(base)) return OpCategory::kReduction;
  if (Has(base, "norm") || Has(base, "softmax")) return OpCategory::kNormalization;
  if (IsElementwiseName(base)) return OpCategory::kElementwise;
  return OpCategory::kOther;
}

namespace {

OpCategory ScanForCategory(std::string_view kernel) {
  if (IsCommunicationKernel(kernel)) return OpCategory::kCommunication;
  if (kernel.starts_with("Memcpy") || kernel.starts_with("Memset")) return OpCategory::kMemcpy;
  if (kernel.starts_with("triton_")) return OpCategory::kCompiled;  // Inductor's kernels
  const std::string low = base::AsciiLower(kernel);
  static constexpr std::array<std::string_view, 4> kAttention = {"attn", "attention", "fmha",
                                                                 "flash"};
  static constexpr std::array<std::string_view, 5> kConv = {"conv", "fprop", "dgrad", "wgrad",
                                                            "igemm_"};
  static constexpr std::array<std::string_view, 4> kMoe = {"moe", "topk", "routing", "expert"};
  static constexpr std::array<std::string_view, 4> kGemm = {"gemm", "gemv", "cijk_", "matmul"};
  if (HasAny(low, kAttention)) return OpCategory::kAttention;
  if (HasAny(low, kConv)) return OpCategory::kConvolution;
  if (HasAny(low, kMoe)) return OpCategory::kMoe;
  if (HasAny(low, kGemm) || !MatrixCoreFamily(kernel).empty()) return OpCategory::kGemm;
  if (Has(low, "norm") || Has(low, "softmax")) return OpCategory::kNormalization;
  if (Has(low, "reduce") || Has(low, "reduction")) return OpCategory::kReduction;
  static constexpr std::array<std::string_view, 8> kElementwise = {
      "elementwise", "multi_tensor_apply",
      "vectorized",  "unrolled",
      "activation",  "and_mul",
      "rotary",      "rope"};
  if (HasAny(low, kElementwise)) return OpCategory::kElementwise;
  return OpCategory::kOther;
}

}  // namespace

OpCategory CategoryOfKernel(std::string_view kernel) {
  static base::NameMemo<OpCategory> memo;
  return memo.Get(kernel, [&] { return ScanForCategory(kernel); });
}

namespace {

// Per name id, a category found once (-1: not yet).
struct CategoryCache {
  std::vector<int8_t> op, kernel;
  OpCategory Of(std::vector<int8_t>& cache, uint32_t id, std::string_view name,
                OpCategory (*fn)(std::string_view)) {
    if (cache[id] < 0) cache[id] = static_cast<int8_t>(fn(name));
    return static_cast<OpCategory>(cache[id]);
  }
};

// The innermost cpu_op above tree node n, else -1. Python frames and annotations are skipped, and
// a graph's own row (trace/graph_capture.h), so that a graph replayed by torch.compile's
// CompiledFunction takes that operator's category.
int32_t CpuOpOf(const trace::TraceModel& m, const OpTree& t, int32_t n) {
  auto skipped = [&](int32_t k) {
    const size_t e = t.nodes[k].event;
    return m.kind[e] != trace::EventKind::kCpuOp || trace::IsGraphRow(m.name_of(e));
  };
  while (n >= 0 && skipped(n)) n = t.nodes[n].parent;
  return n;
}

}  // namespace

CategoryResult ComputeCategories(const trace::TraceModel& m, const OpTree& t) {
  CategoryResult r;
  CategoryCache cache{std::vector<int8_t>(m.names.size(), -1),
                      std::vector<int8_t>(m.names.size(), -1)};
  std::array<std::unordered_map<uint32_t, int64_t>, kNumOpCategories> by_name;
  for (size_t i = 0; i < m.size(); ++i) {
    if (!trace::IsGpuKind(m.kind[i])) continue;
    const int64_t ns = m.dur_ns[i];
    const int32_t owner = i < t.owner.size() ? CpuOpOf(m, t, t.owner[i]) : -1;
    uint32_t who = m.name[i];
    OpCategory c = OpCategory::kMemcpy;
    if (m.kind[i] == trace::EventKind::kKernel) {
      c = cache.Of(cache.kernel, m.name[i], m.name_of(i), CategoryOfKernel);
      if (owner >= 0 && c != OpCategory::kCommunication) {
        who = m.name[t.nodes[owner].event];
        const OpCategory by_op = cache.Of(cache.op, who, m.names[who], CategoryOfOp);
        if (by_op != OpCategory::kOther) c = by_op;
      }
    }
    if (owner < 0) r.by_kernel_ns += ns;
    CategoryShare& s = r.by[static_cast<size_t>(c)];
    s.ns += ns, ++s.kernels;
    by_name[static_cast<size_t>(c)][who] += ns;
    r.total_ns += ns;
  }
  for (size_t c = 0; c < kNumOpCategories; ++c) {
    for (const auto& [id, ns] : by_name[c])
      if (ns > r.by[c].top_ns || (ns == r.by[c].top_ns && m.names[id] < r.by[c].top_op))
        r.by[c].top_ns = ns, r.by[c].top_op = m.names[id];
  }
  return r;
}

}  // namespace trainprof::analysis
