#include "analysis/flops.h"

#include <algorithm>
#include <map>
#include <numeric>

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

int DtypeBytes(std::string_view t) {
  if (t == "float" || t == "int") return 4;
  if (t == "double" || t == "long int" || t == "long") return 8;
  if (t.find("Half") != std::string_view::npos || t.find("BFloat16") != std::string_view::npos)
    return 2;
  return 0;
}

Precision PrecisionOf(std::string_view t) {
  if (t == "float") return Precision::kFp32;
  if (t.find("Half") != std::string_view::npos || t.find("BFloat16") != std::string_view::npos)
    return Precision::kFp16;
  return Precision::kUnknown;
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

bool HasFlopsFormula(std::string_view op) {
  return op == "aten::mm" || op == "aten::addmm" || op == "aten::bmm" || op == "aten::baddbmm" ||
         op == "aten::linear" || IsConvolution(op) || IsAttention(op);
}

// FLOPs and the output's elements of one call, from its tensor inputs; {0, 0} when they do not
// fit the operator.
std::pair<double, double> Count(std::string_view op, const std::vector<Shape>& in) {
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
  if (op == "aten::linear" && !in.empty() && !in[0].empty() && dims(1, 2) &&
      in[0].back() == in[1][1]) {
    const double rows = Elements(in[0]) / in[0].back();
    return {2.0 * rows * in[1][1] * in[1][0], rows * in[1][0]};
  }
  if (IsConvolution(op) && in.size() >= 2 && in[0].size() >= 3 && in[1].size() == in[0].size()) {
    const Shape &x = in[0], &w = in[1];
    const double spatial = Elements(Shape(x.begin() + 2, x.end()));
    const double kernel = Elements(Shape(w.begin() + 2, w.end()));
    const double out = 1.0 * x[0] * w[0] * spatial;
    return {2.0 * out * w[1] * kernel, out};
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

const char* PrecisionName(Precision p) {
  switch (p) {
    case Precision::kFp32:
      return "fp32";
    case Precision::kTf32:
      return "tf32";
    case Precision::kFp16:
      return "fp16/bf16";
    case Precision::kUnknown:
      break;
  }
  return "unknown";
}

double PeakTflops::For(Precision p) const {
  switch (p) {
    case Precision::kFp32:
      return fp32;
    case Precision::kTf32:
      return tf32 > 0 ? tf32 : fp32;
    case Precision::kFp16:
      return fp16;
    case Precision::kUnknown:
      break;
  }
  return 0;
}

// Vendors' dense figures (no sparsity): NVIDIA's datasheets (SXM parts unless the name says
// PCIe), AMD's for the matrix cores.
PeakTflops PeakFor(std::string_view name) {
  const auto has = [&](std::string_view s) { return name.find(s) != std::string_view::npos; };
  const bool pcie = has("PCIe") || has("PCIE");
  if (has("H200")) return {"H200", 67, 494.7, 989.4};
  if (has("H100"))
    return pcie ? PeakTflops{"H100 PCIe", 51, 378, 756} : PeakTflops{"H100", 67, 494.7, 989.4};
  if (has("A100")) return {"A100", 19.5, 156, 312};
  if (has("V100")) return {"V100", pcie ? 14.0 : 15.7, 0, pcie ? 112.0 : 125.0};
  if (has("A10G")) return {"A10G", 31.2, 35, 70};
  if (has("L4")) return {"L4", 30.3, 60, 121};
  if (has("T4")) return {"T4", 8.1, 0, 65};
  if (has("MI300")) return {"MI300X", 163.4, 653.7, 1307.4};
  if (has("MI250")) return {"MI250X", 95.7, 0, 383};
  return {};
}

OpFlops FlopsOf(std::string_view op, std::string_view dims, std::string_view types) {
  const std::vector<Shape> in = ParseDims(dims);
  const auto [flops, out_elements] = Count(op, in);
  if (flops <= 0) return {};
  const std::vector<std::string_view> t = ParseTypes(types);
  OpFlops r{flops, 0, t.empty() ? Precision::kUnknown : PrecisionOf(t[0])};
  const int size = t.empty() ? 0 : DtypeBytes(t[0]);
  if (size == 0) return r;
  double elements = out_elements;
  for (size_t i = 0; i < in.size() && i < t.size(); ++i)
    if (DtypeBytes(t[i]) > 0) elements += Elements(in[i]) * (in[i].empty() ? 0 : 1);
  r.bytes = elements * size;
  return r;
}

namespace {

// Per tree node, its FLOPs (0: none), Tensor Core work making fp32 into tf32.
std::vector<OpFlops> NodeFlops(const trace::TraceModel& m, const OpTree& tree) {
  std::vector<OpFlops> out(tree.nodes.size());
  std::vector<int8_t> candidate(m.names.size(), -1);  // per name id: a FLOPs operator?
  for (size_t n = 0; n < tree.nodes.size(); ++n) {
    const uint32_t e = tree.nodes[n].event;
    if (m.kind[e] != trace::EventKind::kCpuOp) continue;
    int8_t& c = candidate[m.name[e]];
    if (c < 0) c = HasFlopsFormula(m.name_of(e));
    if (c == 0) continue;
    const trace::OpInputs* in = m.InputsOf(e);
    if (in == nullptr || in->dims == trace::kNoName) continue;
    out[n] = FlopsOf(m.name_of(e), m.names[in->dims],
                     in->types == trace::kNoName ? std::string_view() : m.names[in->types]);
    if (out[n].precision == Precision::kFp32 && tree.nodes[n].tc_total_ns > 0)
      out[n].precision = Precision::kTf32;
  }
  return out;
}

// The step whose host range holds `ts`, or -1.
int StepOf(const StepsResult& steps, int64_t ts) {
  for (size_t i = 0; i < steps.steps.size(); ++i)
    if (ts >= steps.steps[i].host_begin_ns && ts < steps.steps[i].host_end_ns)
      return static_cast<int>(i);
  return -1;
}

}  // namespace

FlopsResult ComputeFlops(const trace::TraceModel& m, const OpTree& tree, const StepsResult& steps,
                         const FlopsOptions& o) {
  FlopsResult r;
  if (std::ranges::none_of(m.op_inputs,
                           [](const trace::OpInputs& in) { return in.dims != trace::kNoName; }))
    return r;
  r.device_name = DeviceName(m);
  r.peak = PeakFor(r.device_name);
  if (o.peak_tflops > 0) r.peak = {"--peak-tflops", o.peak_tflops, o.peak_tflops, o.peak_tflops};
  r.has_shapes = true;
  const std::vector<OpFlops> flops = NodeFlops(m, tree);
  std::map<std::pair<uint32_t, Precision>, FlopsRow> rows;
  std::vector<char> inside(tree.nodes.size(), 0);  // a counted ancestor holds the node
  std::map<Precision, double> by_precision;
  for (const Step& s : steps.steps) r.steps.push_back({s.name, 0, s.dur_ns()});
  for (size_t n = 0; n < tree.nodes.size(); ++n) {
    const OpNode& node = tree.nodes[n];
    if (node.parent >= 0) inside[n] = inside[node.parent] || flops[node.parent].flops > 0;
    if (flops[n].flops <= 0) continue;
    FlopsRow& row = rows[{m.name[node.event], flops[n].precision}];
    ++row.calls;
    row.flops += flops[n].flops;
    row.bytes += flops[n].bytes;
    row.device_ns += node.device_total_ns;
    if (inside[n]) continue;
    by_precision[flops[n].precision] += flops[n].flops;
    if (const int step = StepOf(steps, m.ts_ns[node.event]); step >= 0)
      r.steps[step].flops += flops[n].flops;
  }
  for (auto& [key, row] : rows) {
    row.name = m.names[key.first];
    row.precision = key.second;
    r.operators.push_back(row);
  }
  std::ranges::stable_sort(r.operators,
                           [](const FlopsRow& a, const FlopsRow& b) { return a.flops > b.flops; });
  double best = 0;
  for (const auto& [p, f] : by_precision)
    if (f > best) best = f, r.main_precision = p;
  return r;
}

}  // namespace trainprof::analysis
