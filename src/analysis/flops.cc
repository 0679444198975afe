#include "analysis/flops.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <tuple>
#include <unordered_map>

#include "analysis/ranks/collectives.h"  // DtypeBytes

namespace trainprof::analysis {

namespace {

using Shape = std::vector<int64_t>;

// "[[512], [1024, 1705], [], [[2], [3]]]" -> {512}, {1024, 1705}, {}, {} (a list of tensors is
// no one tensor: empty).
std::vector<Shape> ParseDims(std::string_view text) {
  std::vector<Shape> out;
  int depth = 0;
  bool nested = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '[') {
      if (++depth == 2) out.emplace_back(), nested = false;
      if (depth == 3 && !out.empty()) out.back().clear(), nested = true;
    } else if (c == ']') {
      --depth;
    } else if (depth == 2 && !nested && (c == '-' || (c >= '0' && c <= '9'))) {
      int64_t v = 0;
      const bool neg = c == '-';
      if (neg) ++i;
      for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) v = v * 10 + (text[i] - '0');
      --i;
      out.back().push_back(neg ? -v : v);
    }
  }
  return out;
}

// "[\"float\", \"Scalar\"]" -> float, Scalar.
std::vector<std::string_view> ParseTypes(std::string_view text) {
  std::vector<std::string_view> out;
  for (size_t i = text.find('"'); i != std::string_view::npos; i = text.find('"', i)) {
    const size_t end = text.find('"', i + 1);
    if (end == std::string_view::npos) break;
    out.push_back(text.substr(i + 1, end - i - 1));
    i = end + 1;
  }
  return out;
}

double Elements(const Shape& s) {
  return std::accumulate(s.begin(), s.end(), 1.0, [](double a, int64_t d) { return a * d; });
}

bool IsConvolution(std::string_view op) {
  return op == "aten::convolution" || op == "aten::_convolution" || op == "aten::conv1d" ||
         op == "aten::conv2d" || op == "aten::conv3d" || op == "aten::cudnn_convolution" ||
         op == "aten::miopen_convolution" || op == "aten::mkldnn_convolution";
}

bool IsAttention(std::string_view op) {
  return op == "aten::scaled_dot_product_attention" ||
         op == "aten::_scaled_dot_product_flash_attention" ||
         op == "aten::_scaled_dot_product_efficient_attention" ||
         op == "aten::_scaled_dot_product_cudnn_attention";
}

// Serving frameworks' own GEMMs ("vllm::rocm_unquantized_gemm", "aiter::gemm_a16w16"): x
// [..., K] times a weight [N, K], as aten::linear.
bool IsFrameworkGemm(std::string_view op) {
  return !op.starts_with("aten::") && op.find("gemm") != std::string_view::npos;
}

// Serving frameworks' fused mixture-of-experts ("vllm::outplace_fused_experts",
// "sglang::inplace_fused_experts", "vllm::fused_moe"): x [T, H], w1 [E, N, H], w2 [E, H, I],
// topk_weights [T, k], ...: each token's k experts run x w1^T then (its N/2 or N outputs) w2^T.
bool IsFusedMoe(std::string_view op) {
  return op.find("::") != std::string_view::npos &&
         (op.find("fused_experts") != std::string_view::npos ||
          op.find("fused_moe") != std::string_view::npos);
}

bool HasFlopsFormula(std::string_view op) {
  return IsFrameworkGemm(op) || IsFusedMoe(op) || op == "aten::mm" || op == "aten::addmm" ||
         op == "aten::bmm" || op == "aten::baddbmm" || op == "aten::linear" || IsConvolution(op) ||
         IsAttention(op);
}

// A convolution's geometry from its "Concrete Inputs" (PyTorch 2.x writes each scalar argument
// as a string: "[2, 2]", "1", "same", "True"), by the operator's argument order.
struct ConvArgs {
  std::vector<int64_t> stride, padding, dilation, output_padding;
  int64_t groups = 1;
  bool same = false, transposed = false;
  bool known = false;  // stride and padding were there
};

std::vector<int64_t> Ints(std::string_view s) {
  std::vector<int64_t> out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') continue;
    int64_t v = 0;
    for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) v = v * 10 + (s[i] - '0');
    out.push_back(v);
  }
  return out;
}

ConvArgs ConvArgsOf(std::string_view op, std::string_view concrete) {
  struct Places {
    int stride, padding, dilation, transposed, output_padding, groups;
  };
  // convolution / _convolution (input, weight, bias, stride, padding, dilation, transposed,
  // output_padding, groups, ...); cudnn_convolution (input, weight, padding, stride, dilation,
  // groups, ...); miopen / mkldnn (input, weight, bias, padding, stride, dilation, groups, ...);
  // conv1d / 2d / 3d (input, weight, bias, stride, padding, dilation, groups).
  const Places p = op == "aten::convolution" || op == "aten::_convolution"
                       ? Places{3, 4, 5, 6, 7, 8}
                   : op == "aten::cudnn_convolution" ? Places{3, 2, 4, -1, -1, 5}
                   : op == "aten::miopen_convolution" || op == "aten::mkldnn_convolution"
                       ? Places{4, 3, 5, -1, -1, 6}
                       : Places{3, 4, 5, -1, -1, 6};
  const std::vector<std::string_view> v = ParseTypes(concrete);  // the array's strings
  auto at = [&](int i) {
    return i >= 0 && static_cast<size_t>(i) < v.size() ? v[static_cast<size_t>(i)]
                                                       : std::string_view();
  };
  ConvArgs a;
  a.stride = Ints(at(p.stride));
  a.same = at(p.padding) == "same";
  a.padding = at(p.padding) == "valid" ? std::vector<int64_t>{0} : Ints(at(p.padding));
  a.dilation = Ints(at(p.dilation));
  a.transposed = at(p.transposed) == "True";
  a.output_padding = Ints(at(p.output_padding));
  if (const std::vector<int64_t> g = Ints(at(p.groups)); g.size() == 1 && g[0] > 0) a.groups = g[0];
  a.known = !a.stride.empty() && (a.same || !a.padding.empty());
  return a;
}

// Spatial size `d` of the output for input size x and kernel size k. Without the geometry, the
// input's (stride 1, "same" padding).
int64_t ConvOut(const ConvArgs& a, size_t d, int64_t x, int64_t k) {
  if (!a.known || a.same) return x;
  auto get = [&](const std::vector<int64_t>& v, int64_t dflt) {
    return v.empty() ? dflt : v[std::min(d, v.size() - 1)];
  };
  const int64_t s = std::max<int64_t>(1, get(a.stride, 1)), p = get(a.padding, 0),
                dil = get(a.dilation, 1);
  if (a.transposed) return (x - 1) * s - 2 * p + dil * (k - 1) + get(a.output_padding, 0) + 1;
  const int64_t span = x + 2 * p - dil * (k - 1) - 1;
  return span < 0 ? 0 : span / s + 1;
}

// x [N, C, *S], w [O, C/g, *K] (transposed: [C, O/g, *K]): each output element (each input
// element, transposed) takes C/g * prod(K) multiply-adds.
std::pair<double, double> ConvolutionCount(const Shape& x, const Shape& w, const ConvArgs& a) {
  double in_spatial = 1, out_spatial = 1;
  for (size_t d = 2; d < x.size(); ++d) {
    in_spatial *= static_cast<double>(x[d]);
    out_spatial *= static_cast<double>(ConvOut(a, d - 2, x[d], w[d]));
  }
  const double kernel = Elements(Shape(w.begin() + 2, w.end()));
  if (a.transposed) {
    const double out = 1.0 * x[0] * w[1] * a.groups * out_spatial;
    return {2.0 * x[0] * x[1] * in_spatial * w[1] * kernel, out};
  }
  const double out = 1.0 * x[0] * w[0] * out_spatial;
  return {2.0 * out * w[1] * kernel, out};
}

// FLOPs and the output's elements of one call, from its tensor inputs; {0, 0} when they do not
// fit the operator.
std::pair<double, double> Count(std::string_view op, const std::vector<Shape>& in,
                                std::string_view concrete) {
  auto dims = [&](size_t i, size_t n) { return i < in.size() && in[i].size() == n; };
  const size_t first = op == "aten::addmm" || op == "aten::baddbmm" ? 1 : 0;
  if ((op == "aten::mm" || op == "aten::addmm") && dims(first, 2) && dims(first + 1, 2) &&
      in[first][1] == in[first + 1][0]) {
    const Shape &a = in[first], &b = in[first + 1];
    return {2.0 * a[0] * a[1] * b[1], 1.0 * a[0] * b[1]};
  }
  if ((op == "aten::bmm" || op == "aten::baddbmm") && dims(first, 3) && dims(first + 1, 3)) {
    const Shape &a = in[first], &b = in[first + 1];
    return {2.0 * a[0] * a[1] * a[2] * b[2], 1.0 * a[0] * a[1] * b[2]};
  }
  if ((op == "aten::linear" || IsFrameworkGemm(op)) && !in.empty() && !in[0].empty() &&
      dims(1, 2) && in[0].back() == in[1][1]) {
    const double rows = Elements(in[0]) / in[0].back();
    return {2.0 * rows * in[1][1] * in[1][0], rows * in[1][0]};
  }
  if (IsConvolution(op) && in.size() >= 2 && in[0].size() >= 3 && in[1].size() == in[0].size())
    return ConvolutionCount(in[0], in[1], ConvArgsOf(op, concrete));
  if (IsFusedMoe(op) && dims(0, 2) && dims(1, 3) && dims(2, 3) && dims(3, 2) &&
      in[1][2] == in[0][1] && in[2][1] == in[0][1] && in[3][0] == in[0][0]) {
    const double routed = 1.0 * in[0][0] * in[3][1];  // tokens x experts each
    return {2.0 * routed * in[0][1] * (in[1][1] + in[2][2]), 1.0 * in[0][0] * in[0][1]};
  }
  if (IsAttention(op) && dims(0, 4) && dims(1, 4) && dims(2, 4)) {
    const Shape &q = in[0], &v = in[2];
    const double scores = 1.0 * q[0] * q[1] * q[2] * in[1][2];
    return {2.0 * scores * (q[3] + v[3]), 1.0 * q[0] * q[1] * q[2] * v[3]};
  }
  return {0, 0};
}

// The GPU the trace ran on: the device of its first kernel, else the first one it describes.
std::string DeviceName(const trace::TraceModel& m) {
  for (size_t i = 0; i < m.size(); ++i)
    if (m.kind[i] == trace::EventKind::kKernel) {
      if (const trace::DeviceInfo* d = m.FindDevice(m.device_of(i))) return d->name;
      break;
    }
  return m.devices.empty() ? std::string() : m.devices.front().name;
}

}  // namespace

OpFlops FlopsOf(std::string_view op, std::string_view dims, std::string_view types,
                std::string_view concrete) {
  const std::vector<Shape> in = ParseDims(dims);
  const auto [flops, out_elements] = Count(op, in, concrete);
  if (flops <= 0) return {};
  const std::vector<std::string_view> t = ParseTypes(types);
  OpFlops r{flops, 0, t.empty() ? Precision::kUnknown : PrecisionOf(t[0])};
  const int64_t size = t.empty() ? 0 : DtypeBytes(t[0]);
  if (size == 0) return r;
  double elements = out_elements;
  for (size_t i = 0; i < in.size() && i < t.size(); ++i)
    if (DtypeBytes(t[i]) > 0) elements += Elements(in[i]) * (in[i].empty() ? 0 : 1);
  r.bytes = elements * static_cast<double>(size);
  return r;
}

namespace {

// What NodeFlops found, per name id and input set (name id << 32 | set id): a training loop calls
// an operator with the same shapes every step, and parsing them again at every call was most
// of this view's time.
using FlopsMemo = std::unordered_map<uint64_t, OpFlops>;

// The FLOPs of tree node n (0: none), Tensor Core work making fp32 into tf32. `candidate` caches,
// per name id, whether the operator has a formula (-1: not yet known).
OpFlops NodeFlops(const trace::TraceModel& m, const OpTree& tree, size_t n,
                  std::vector<int8_t>& candidate, FlopsMemo& memo) {
  const uint32_t e = tree.nodes[n].event;
  if (m.kind[e] != trace::EventKind::kCpuOp) return {};
  int8_t& c = candidate[m.name[e]];
  if (c < 0) c = HasFlopsFormula(m.name_of(e));
  if (c == 0) return {};
  const uint32_t set = m.InputSetOf(e);
  if (set == trace::kNoName || m.input_sets[set].dims == trace::kNoName) return {};
  auto [it, fresh] = memo.try_emplace(uint64_t{m.name[e]} << 32 | set);
  if (fresh) {
    const trace::OpInputs& in = m.input_sets[set];
    auto text = [&](uint32_t id) {
      return id == trace::kNoName ? std::string_view() : m.names[id];
    };
    it->second = FlopsOf(m.name_of(e), m.names[in.dims], text(in.types), text(in.concrete));
  }
  OpFlops f = it->second;
  if (f.precision == Precision::kFp32 && tree.tc_total(n) > 0) f.precision = Precision::kTf32;
  return f;
}

// The bytes (and a nominal FLOP count) of an elementwise, normalization or reduction call from
// its tensor inputs (ShapeRow, flops.h); {} for other categories or without a dtype size.
OpFlops MemoryBoundFlops(OpCategory c, std::string_view dims, std::string_view types) {
  const std::vector<Shape> in = ParseDims(dims);
  const std::vector<std::string_view> t = ParseTypes(types);
  double largest = 0, inputs = 0;
  for (size_t i = 0; i < in.size() && i < t.size(); ++i) {
    if (DtypeBytes(t[i]) == 0 || in[i].empty()) continue;
    const double e = Elements(in[i]);
    largest = std::max(largest, e), inputs += e;
  }
  const int64_t size = t.empty() ? 0 : DtypeBytes(t[0]);
  if (largest <= 0 || size == 0) return {};
  const double b = static_cast<double>(size);
  const Precision p = PrecisionOf(t[0]);
  switch (c) {
    case OpCategory::kElementwise:
      return {largest, (inputs + largest) * b, p};
    case OpCategory::kNormalization:
      return {5 * largest, (inputs + largest) * b, p};
    case OpCategory::kReduction:
      return {largest, inputs * b, p};
    default:
      return {};
  }
}

// The first step whose host range holds a time, or -1: by binary search where the ranges are in
// order and disjoint, as a trace's ProfilerStep#N are (a scan of 200 steps per counted call was
// a third of this view's time on 1 GB), else by a scan.
class StepFinder {
 public:
  explicit StepFinder(const StepsResult& s) : steps_(s.steps) {
    for (size_t i = 0; i < steps_.size(); ++i)
      ordered_ = ordered_ && steps_[i].host_begin_ns <= steps_[i].host_end_ns &&
                 (i == 0 || steps_[i - 1].host_end_ns <= steps_[i].host_begin_ns);
  }
  int operator()(int64_t ts) const {
    if (!ordered_) {
      for (size_t i = 0; i < steps_.size(); ++i)
        if (Holds(i, ts)) return static_cast<int>(i);
      return -1;
    }
    auto it = std::upper_bound(steps_.begin(), steps_.end(), ts,
                               [](int64_t t, const Step& s) { return t < s.host_begin_ns; });
    const size_t i = static_cast<size_t>(it - steps_.begin());
    return i > 0 && Holds(i - 1, ts) ? static_cast<int>(i - 1) : -1;
  }

 private:
  bool Holds(size_t i, int64_t ts) const {
    return ts >= steps_[i].host_begin_ns && ts < steps_[i].host_end_ns;
  }
  const std::vector<Step>& steps_;
  bool ordered_ = true;
};

// Input Dims as one line, whatever the trace's layout: "[[512], [141, 512], []]".
std::string OneLine(std::string_view dims) {
  std::string out;
  for (char c : dims) {
    if (c == ' ' || c == '\n' || c == '\t' || c == '\r') continue;
    out += c;
    if (c == ',') out += ' ';
  }
  return out;
}

// A call's place in the roofline: its operator, Input Dims and types (name ids).
using ShapeKey = std::tuple<uint32_t, uint32_t, uint32_t>;

void AddToShape(std::map<ShapeKey, ShapeRow>& rows, const trace::TraceModel& m, uint32_t e,
                OpCategory c, const OpFlops& f, int64_t device_ns) {
  const trace::OpInputs& in = *m.InputsOf(e);
  ShapeRow& row = rows[{m.name[e], in.dims, in.types}];
  if (row.calls++ == 0) {
    row.name = m.name_of(e);
    row.dims = OneLine(m.names[in.dims]);
    const std::vector<std::string_view> t =
        ParseTypes(in.types == trace::kNoName ? std::string_view() : m.names[in.types]);
    row.dtype = t.empty() ? "" : std::string(t[0]);
    row.category = c;
    row.precision = f.precision;
  }
  row.flops += f.flops, row.bytes += f.bytes, row.device_ns += device_ns;
}

// The roofline rows: formula calls with no counted call below them (their device total), and
// memory-bound calls that launched GPU work themselves (their device self time).
std::vector<ShapeRow> ShapeRows(const trace::TraceModel& m, const OpTree& tree,
                                const std::vector<std::pair<uint32_t, OpFlops>>& counted) {
  std::vector<uint8_t> below(tree.nodes.size(), 0);  // a counted call is inside the node
  std::vector<uint8_t> is_counted(tree.nodes.size(), 0);
  for (const auto& [n, f] : counted) is_counted[n] = 1;
  for (size_t n = tree.nodes.size(); n-- > 0;)
    if ((is_counted[n] || below[n]) && tree.nodes[n].parent >= 0) below[tree.nodes[n].parent] = 1;
  std::vector<int8_t> categories(m.names.size(), -1);  // per name id, found once
  auto category = [&](uint32_t e) {
    int8_t& c = categories[m.name[e]];
    if (c < 0) c = static_cast<int8_t>(CategoryOfOp(m.name_of(e)));
    return static_cast<OpCategory>(c);
  };
  std::map<ShapeKey, ShapeRow> rows;
  for (const auto& [n, f] : counted)
    if (!below[n])
      AddToShape(rows, m, tree.nodes[n].event, category(tree.nodes[n].event), f,
                 tree.device_total_ns[n]);
  FlopsMemo per_call;  // a shape's text parsed once, not at every call
  for (size_t n = 0; n < tree.nodes.size(); ++n) {
    const uint32_t e = tree.nodes[n].event;
    if (is_counted[n] || tree.device_self_ns[n] <= 0 || m.kind[e] != trace::EventKind::kCpuOp)
      continue;
    const uint32_t set = m.InputSetOf(e);
    if (set == trace::kNoName) continue;
    const trace::OpInputs& in = m.input_sets[set];
    if (in.dims == trace::kNoName || in.types == trace::kNoName) continue;
    const OpCategory c = category(e);
    auto [it, fresh] = per_call.try_emplace(uint64_t{m.name[e]} << 32 | set);
    if (fresh) it->second = MemoryBoundFlops(c, m.names[in.dims], m.names[in.types]);
    if (it->second.bytes > 0) AddToShape(rows, m, e, c, it->second, tree.device_self_ns[n]);
  }
  std::vector<ShapeRow> out;
  for (auto& [key, row] : rows) out.push_back(std::move(row));
  std::ranges::stable_sort(
      out, [](const ShapeRow& a, const ShapeRow& b) { return a.device_ns > b.device_ns; });
  return out;
}

}  // namespace

RooflinePoint Roofline(const ShapeRow& r, const PeakTflops& peak) {
  const double tflops = peak.For(r.precision), tbps = peak.hbm_tbps;
  if (tflops <= 0 || tbps <= 0 || r.device_ns <= 0 || r.bytes <= 0) return {};
  const double compute_ns = r.flops / tflops / 1e3, memory_ns = r.bytes / tbps / 1e3;
  return {true, r.intensity() >= tflops / tbps,
          100 * std::max(compute_ns, memory_ns) / static_cast<double>(r.device_ns)};
}

namespace {

// FlopsResult's coverage: `counted` marks the nodes with FLOPs; a node inside one is covered.
void Coverage(const trace::TraceModel& m, const OpTree& tree, const std::vector<uint8_t>& state,
              uint8_t counted, FlopsResult& r) {
  std::map<std::string, int64_t> rest;  // by the operator that launched it
  int64_t under_ops = 0;
  for (size_t n = 0; n < tree.nodes.size(); ++n) {
    const int32_t p = tree.nodes[n].parent;
    under_ops += tree.device_self_ns[n];
    if ((state[n] & counted) != 0 && (p < 0 || state[static_cast<size_t>(p)] == 0))
      r.covered_ns += tree.device_total_ns[n];
    else if (state[n] == 0 && tree.device_self_ns[n] > 0)
      rest[m.name_of(tree.nodes[n].event)] += tree.device_self_ns[n];
  }
  if (tree.gpu_ns > under_ops) rest["no operator"] += tree.gpu_ns - under_ops;
  for (const auto& [name, ns] : rest) r.uncovered.emplace_back(name, ns);
  std::ranges::sort(r.uncovered, [](const auto& a, const auto& b) { return a.second > b.second; });
  if (r.uncovered.size() > 3) r.uncovered.resize(3);
}

}  // namespace

FlopsResult ComputeFlops(const trace::TraceModel& m, const OpTree& tree, const StepsResult& steps,
                         const FlopsOptions& o) {
  FlopsResult r;
  if (std::ranges::none_of(m.input_sets,
                           [](const trace::OpInputs& in) { return in.dims != trace::kNoName; }))
    return r;
  r.device_name = DeviceName(m);
  r.peak = PeakFor(r.device_name);
  if (const double p = o.peak_tflops; p > 0)
    r.peak = {"--peak-tflops", p, p, p, p, p, r.peak.hbm_tbps};
  if (o.peak_tbps > 0) r.peak.hbm_tbps = o.peak_tbps;
  r.has_shapes = true;
  std::map<std::pair<uint32_t, Precision>, FlopsRow> rows;
  // Per node: kCounted when it has FLOPs, kInside when a counted ancestor holds it. A byte, not
  // the node's OpFlops: a 1 GB trace has a million nodes.
  enum : uint8_t { kCounted = 1, kInside = 2 };
  std::vector<uint8_t> state(tree.nodes.size(), 0);
  std::vector<int8_t> candidate(m.names.size(), -1);
  FlopsMemo memo;
  const StepFinder step_of(steps);
  std::map<Precision, double> by_precision;
  std::vector<std::pair<uint32_t, OpFlops>> counted;
  for (const Step& s : steps.steps) r.steps.push_back({s.name, 0, s.dur_ns()});
  for (size_t n = 0; n < tree.nodes.size(); ++n) {
    const OpNode& node = tree.nodes[n];
    if (node.parent >= 0 && state[node.parent] != 0) state[n] = kInside;
    const OpFlops f = NodeFlops(m, tree, n, candidate, memo);
    if (f.flops <= 0) continue;
    state[n] |= kCounted;
    counted.emplace_back(static_cast<uint32_t>(n), f);
    FlopsRow& row = rows[{m.name[node.event], f.precision}];
    ++row.calls;
    row.flops += f.flops;
    row.bytes += f.bytes;
    row.device_ns += tree.device_total_ns[n];
    if (state[n] & kInside) continue;
    by_precision[f.precision] += f.flops;
    if (const int step = step_of(m.ts_ns[node.event]); step >= 0) r.steps[step].flops += f.flops;
  }
  for (auto& [key, row] : rows) {
    row.name = m.names[key.first];
    row.precision = key.second;
    r.operators.push_back(row);
  }
  std::ranges::stable_sort(r.operators,
                           [](const FlopsRow& a, const FlopsRow& b) { return a.flops > b.flops; });
  r.shapes = ShapeRows(m, tree, counted);
  Coverage(m, tree, state, kCounted, r);
  double best = 0;
  for (const auto& [p, f] : by_precision)
    if (f > best) best = f, r.main_precision = p;
  return r;
}

}  // namespace trainprof::analysis
