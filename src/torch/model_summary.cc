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
  const int64_t unseen = FinishTotals(s);
  if (status.ok() && unseen > 0) {
    s.notes.push_back(fmt::format(
        "{} leaf module(s) show no shapes: they own no parameters (activation, pooling, "
        "dropout modules) or did not run in the forward pass; their outputs are not in the "
        "forward/backward pass size",
        unseen));
  }
  return status;
}

}  // namespace trainprof::torchlib
