#include "torch/model_summary.h"

#include <ATen/record_function.h>
#include <fmt/format.h>

#include <numeric>
#include <unordered_map>

namespace trainprof::torchlib {
namespace {

// "torch::nn::Conv2d" -> "Conv2d"; "ns::(anonymous namespace)::CnnImpl" -> "Cnn".
std::string ShortType(const std::string& full) {
  std::string s = full;
  const size_t colon = s.rfind("::");
  if (colon != std::string::npos) s = s.substr(colon + 2);
  if (s.size() > 4 && s.ends_with("Impl")) s.resize(s.size() - 4);
  return s;
}

int64_t Product(const std::vector<int64_t>& v, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to && i < v.size(); ++i) p *= v[i];
  return p;
}

// torchinfo's rule: convolutions count every output position of every sample; other layers
// with weights count one use per sample (Linear: per row of the output, so [B, T, F] inputs
// count B x T uses, where torchinfo counts B).
void ComputeMultAdds(ModuleInfo& m) {
  if (!m.has_shapes || m.params == 0 || m.output_shape.empty()) return;
  const auto& out = m.output_shape;
  if (m.type.find("Conv") != std::string::npos) {
    m.mult_adds = m.params * out[0] * Product(out, 2, out.size());
  } else if (m.type == "Linear" || m.type == "Bilinear") {
    m.mult_adds = m.params * Product(out, 0, out.size() - 1);
  } else if (m.type.find("RNN") != std::string::npos || m.type.find("LSTM") != std::string::npos ||
             m.type.find("GRU") != std::string::npos) {
    m.mult_adds = m.params * Product(out, 0, 2);
  } else {
    m.mult_adds = m.params * out[0];
  }
}

// Operators are matched to modules at the top level of the forward pass (operators called
// inside another operator are not looked at). An operator belongs to a module when one of its
// tensor inputs is a parameter of the module, or a view computed from parameters only (LibTorch's
// F::linear runs t(weight), then addmm(bias, input, weight_t)).
struct Capture {
  std::unordered_map<const c10::TensorImpl*, size_t> owner;  // parameters and their views
  std::vector<at::Tensor> views;
  std::vector<ModuleInfo>* modules = nullptr;
  int depth = 0;
};
thread_local Capture* t_capture = nullptr;

std::unique_ptr<at::ObserverContext> OnStart(const at::RecordFunction&) {
  if (t_capture != nullptr) ++t_capture->depth;
  return nullptr;
}

void OnEnd(const at::RecordFunction& fn, at::ObserverContext*) {
  Capture* c = t_capture;
  if (c == nullptr || --c->depth != 0) return;
  size_t module = SIZE_MAX;
  for (const c10::IValue& v : fn.inputs()) {
    if (!v.isTensor() || !v.toTensor().defined()) continue;
    auto it = c->owner.find(v.toTensor().unsafeGetTensorImpl());
    if (it != c->owner.end()) {
      module = it->second;
      break;
    }
  }
  if (module == SIZE_MAX) return;
  const at::Tensor* input = nullptr;  // the first tensor input the module does not own
  for (const c10::IValue& v : fn.inputs()) {
    if (!v.isTensor() || !v.toTensor().defined()) continue;
    auto it = c->owner.find(v.toTensor().unsafeGetTensorImpl());
    if (it == c->owner.end() || it->second != module) {
      input = &v.toTensor();
      break;
    }
  }
  const at::Tensor* output = nullptr;
  for (const c10::IValue& v : fn.outputs()) {
    if (v.isTensor() && v.toTensor().defined()) {
      output = &v.toTensor();
      break;
    }
  }
  if (output == nullptr) return;
  if (input == nullptr) {  // computed from parameters only: a view of them
    c->owner.emplace(output->unsafeGetTensorImpl(), module);
    c->views.push_back(*output);  // kept alive, so its address is not reused by another tensor
    return;
  }
  ModuleInfo& m = (*c->modules)[module];
  if (!m.has_shapes) m.input_shape = input->sizes().vec();  // the first call's input
  m.output_shape = output->sizes().vec();                   // the last operator's output
  m.output_bytes = static_cast<int64_t>(output->nbytes());
  m.has_shapes = true;
}

void Walk(const torch::nn::Module& module, const std::string& name, int depth, int index,
          std::vector<ModuleInfo>& out, std::vector<const torch::nn::Module*>& ptrs) {
  ModuleInfo m;
  m.name = name;
  m.type = ShortType(module.name());
  m.depth = depth;
  m.index = index;
  for (const auto& p : module.named_parameters(/*recurse=*/false)) {
    const int64_t n = p.value().numel();
    m.params += n;
    if (p.value().requires_grad()) m.trainable += n;
    m.param_bytes += static_cast<int64_t>(p.value().nbytes());
  }
  const auto children = module.named_children();
  m.leaf = children.is_empty();
  out.push_back(std::move(m));
  ptrs.push_back(&module);
  int i = 1;
  for (const auto& child : children) {
    Walk(*child.value(), name.empty() ? child.key() : name + "." + child.key(), depth + 1, i++, out,
         ptrs);
  }
}

// A Sequential's input is its first child's, its output its last child's.
void FillSequentials(std::vector<ModuleInfo>& mods) {
  for (size_t i = mods.size(); i-- > 1;) {
    ModuleInfo& m = mods[i];
    if (m.type != "Sequential" || m.leaf || m.has_shapes) continue;
    const ModuleInfo* first = nullptr;
    const ModuleInfo* last = nullptr;
    for (size_t j = i + 1; j < mods.size() && mods[j].depth > m.depth; ++j) {
      if (mods[j].depth != m.depth + 1) continue;
      if (first == nullptr) first = &mods[j];
      last = &mods[j];
    }
    if (first != nullptr && first->has_shapes && last->has_shapes) {
      m.input_shape = first->input_shape;
      m.output_shape = last->output_shape;
      m.output_bytes = last->output_bytes;
      m.has_shapes = true;
    }
  }
}

}  // namespace

Status SummarizeModule(torch::nn::Module& module, const std::vector<torch::Tensor>& inputs,
                       const std::function<torch::Tensor()>& forward, ModelSummary* out) {
  ModelSummary& s = *out;
  s = ModelSummary{};
  std::vector<const torch::nn::Module*> ptrs;
  Walk(module, "", 0, 0, s.modules, ptrs);
  s.model_type = s.modules[0].type;
  for (const torch::Tensor& t : inputs) {
    if (t.defined()) s.input_bytes += static_cast<int64_t>(t.nbytes());
  }

  Capture capture;
  capture.modules = &s.modules;
  for (size_t i = 0; i < ptrs.size(); ++i) {
    for (const auto& p : ptrs[i]->named_parameters(/*recurse=*/false)) {
      capture.owner.emplace(p.value().unsafeGetTensorImpl(), i);
    }
  }
  Status status = Status::Ok();
  const bool was_training = module.is_training();
  at::CallbackHandle handle = 0;
  try {
    handle = at::addThreadLocalCallback(
        at::RecordFunctionCallback(&OnStart, &OnEnd).needsInputs(true).needsOutputs(true));
    t_capture = &capture;
    module.eval();
    torch::NoGradGuard no_grad;
    torch::Tensor result = forward();
    ModuleInfo& root = s.modules[0];
    if (!inputs.empty() && inputs[0].defined()) root.input_shape = inputs[0].sizes().vec();
    if (result.defined()) {
      root.output_shape = result.sizes().vec();
      root.output_bytes = static_cast<int64_t>(result.nbytes());
      root.has_shapes = true;
    }
  } catch (const std::exception& e) {
    std::string what = e.what();
    if (const size_t nl = what.find('\n'); nl != std::string::npos) what.resize(nl);
    status = InvalidArgument(
        fmt::format("model summary: the forward pass on the given input failed: {}", what));
    s.notes.push_back(
        fmt::format("no shapes: the forward pass on the given input failed ({})", what));
    for (ModuleInfo& m : s.modules) {
      m.has_shapes = false;
      m.input_shape.clear();
      m.output_shape.clear();
      m.output_bytes = 0;
    }
  }
  t_capture = nullptr;
  if (handle != 0) at::removeCallback(handle);
  module.train(was_training);

  FillSequentials(s.modules);
  int64_t unseen = 0;
  for (size_t i = 0; i < s.modules.size(); ++i) {
    ModuleInfo& m = s.modules[i];
    ComputeMultAdds(m);
    s.total_params += m.params;
    s.trainable_params += m.trainable;
    s.param_bytes += m.param_bytes;
    s.total_mult_adds += m.mult_adds;
    if (m.leaf && m.has_shapes) s.forward_backward_bytes += 2 * m.output_bytes;
    if (i > 0 && m.leaf && !m.has_shapes) ++unseen;
  }
  if (status.ok() && unseen > 0) {
    s.notes.push_back(fmt::format(
        "{} leaf module(s) show no shapes: they own no parameters (activation, pooling, "
        "dropout modules) or did not run in the forward pass; their outputs are not in the "
        "forward/backward pass size",
        unseen));
  }
  return status;
}

namespace {

// Null (shown as "-") when the shape was not captured.
report::Value ShapeText(const ModuleInfo& m, const std::vector<int64_t>& shape) {
  if (!m.has_shapes || shape.empty()) return {};
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

// torchinfo's layer label: "Cnn", "├─Conv2d: 1-1", "│    └─Linear: 2-3".
std::string LayerLabel(const std::vector<ModuleInfo>& mods, size_t i) {
  const ModuleInfo& m = mods[i];
  if (m.depth == 0) return m.type;
  // Is the module (or an ancestor at depth d) the last of its siblings?
  auto last_at = [&](size_t k, int depth) {
    for (size_t j = k + 1; j < mods.size() && mods[j].depth >= depth; ++j) {
      if (mods[j].depth == depth) return false;
    }
    return true;
  };
  std::string prefix;
  size_t k = i;
  std::vector<bool> last_of_level(m.depth + 1, false);
  for (int d = m.depth; d >= 1; --d) {
    while (mods[k].depth != d) --k;
    last_of_level[d] = last_at(k, d);
  }
  for (int d = 1; d < m.depth; ++d) prefix += last_of_level[d] ? "     " : "│    ";
  prefix += last_of_level[m.depth] ? "└─" : "├─";
  return fmt::format("{}{}: {}-{}", prefix, m.type, m.depth, m.index);
}

}  // namespace

void AddModelSummarySection(const ModelSummary& s, int64_t depth, report::Report& report) {
  using report::Unit;
  using report::Value;
  report::Section& sec = report.AddSection("model_summary", "Model summary");
  report::Table& t =
      sec.AddTable("model_summary", fmt::format("{} (depth {})", s.model_type, depth),
                   {{"layer", "Layer (type:depth-idx)", Unit::kText},
                    {"name", "Name", Unit::kText},
                    {"input_shape", "Input Shape", Unit::kText},
                    {"output_shape", "Output Shape", Unit::kText},
                    {"params", "Param #", Unit::kCount},
                    {"params_pct", "Param %", Unit::kPercent},
                    {"trainable", "Trainable", Unit::kText},
                    {"mult_adds", "Mult-Adds", Unit::kCount},
                    {"depth", "Depth", Unit::kCount, false},
                    {"type", "Type", Unit::kText, false}});
  for (size_t i = 0; i < s.modules.size(); ++i) {
    const ModuleInfo& m = s.modules[i];
    if (m.depth > depth) continue;
    const bool own = m.params > 0;
    Value pct;
    if (own && s.total_params > 0) {
      pct = 100.0 * static_cast<double>(m.params) / static_cast<double>(s.total_params);
    }
    std::string trainable;
    if (own) trainable = m.trainable == m.params ? "True" : m.trainable == 0 ? "False" : "Partial";
    t.rows.push_back({LayerLabel(s.modules, i), m.name, ShapeText(m, m.input_shape),
                      ShapeText(m, m.output_shape), own ? Value(m.params) : Value(), pct, trainable,
                      m.mult_adds > 0 ? Value(m.mult_adds) : Value(), static_cast<int64_t>(m.depth),
                      m.type});
  }
  t.notes = s.notes;
  t.notes.push_back(
      "Param # counts a module's own parameters (containers show '-'); sizes in binary units "
      "(torchinfo prints MB = 10^6 bytes).");
  sec.AddMetric("total_params", "Total params", s.total_params, Unit::kCount);
  sec.AddMetric("trainable_params", "Trainable params", s.trainable_params, Unit::kCount);
  sec.AddMetric("non_trainable_params", "Non-trainable params", s.total_params - s.trainable_params,
                Unit::kCount);
  sec.AddMetric("total_mult_adds", "Total mult-adds", s.total_mult_adds, Unit::kCount);
  sec.AddMetric("input_size_bytes", "Input size", s.input_bytes, Unit::kBytes);
  sec.AddMetric("forward_backward_pass_size_bytes", "Forward/backward pass size",
                s.forward_backward_bytes, Unit::kBytes);
  sec.AddMetric("params_size_bytes", "Params size", s.param_bytes, Unit::kBytes);
  sec.AddMetric("estimated_total_size_bytes", "Estimated total size", s.EstimatedTotalBytes(),
                Unit::kBytes);
}

}  // namespace trainprof::torchlib
