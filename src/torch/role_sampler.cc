#include "torch/role_sampler.h"

#include <optional>
#include <sstream>
#include <unordered_set>

#include "torch/cuda_allocator.h"

namespace trainprof::torchlib {
namespace {

// Bytes of the storages of `tensors` not in `seen`, adding them to it.
int64_t NewBytes(const std::vector<torch::Tensor>& tensors, std::unordered_set<const void*>& seen) {
  int64_t bytes = 0;
  for (const torch::Tensor& t : tensors) {
    if (!t.defined() || !t.has_storage()) continue;
    const c10::Storage& s = t.storage();
    if (seen.insert(s.unsafeGetStorageImpl()).second) bytes += static_cast<int64_t>(s.nbytes());
  }
  return bytes;
}

// The optimizer's key of a parameter's state: its TensorImpl's address as a stream writes it
// (what LibTorch's optimizers use).
std::string StateKey(const torch::Tensor& p) {
  std::ostringstream key;
  key << p.unsafeGetTensorImpl();
  return key.str();
}

std::vector<torch::Tensor> StateOf(const torch::optim::Optimizer& o, const torch::Tensor& p) {
  const auto it = o.state().find(StateKey(p));
  return it == o.state().end() ? std::vector<torch::Tensor>{} : StateTensors(*it->second);
}

std::vector<torch::Tensor> Grads(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> out;
  for (const torch::Tensor& p : params) out.push_back(p.grad());
  return out;
}

// The caching allocator's total on the one GPU that holds the parameters; none on the CPU, in a
// CPU build of LibTorch, or with parameters over several GPUs.
std::optional<int64_t> CudaAllocated(const std::vector<torch::Tensor>& params) {
  std::optional<int> device;
  for (const torch::Tensor& p : params) {
    if (!p.is_cuda() || (device && *device != p.get_device())) return std::nullopt;
    device = p.get_device();
  }
  if (!device) return std::nullopt;
  StatusOr<int64_t> bytes = CudaAllocatedBytes(*device);
  return bytes.ok() ? std::optional<int64_t>(*bytes) : std::nullopt;
}

}  // namespace

std::vector<torch::Tensor> StateTensors(const torch::optim::OptimizerParamState& state) {
  using namespace torch::optim;  // NOLINT: the optimizers' state types
  if (const auto* s = dynamic_cast<const AdamParamState*>(&state))
    return {s->exp_avg(), s->exp_avg_sq(), s->max_exp_avg_sq()};
  if (const auto* s = dynamic_cast<const AdamWParamState*>(&state))
    return {s->exp_avg(), s->exp_avg_sq(), s->max_exp_avg_sq()};
  if (const auto* s = dynamic_cast<const SGDParamState*>(&state)) return {s->momentum_buffer()};
  if (const auto* s = dynamic_cast<const RMSpropParamState*>(&state))
    return {s->square_avg(), s->momentum_buffer(), s->grad_avg()};
  if (const auto* s = dynamic_cast<const AdagradParamState*>(&state)) return {s->sum()};
  return {};
}

RoleSample RoleSampler::Sample(int64_t step, std::string at) const {
  const std::vector<torch::Tensor> params = model_.parameters();
  std::vector<torch::Tensor> weights = params;
  for (const torch::Tensor& b : model_.buffers()) weights.push_back(b);
  std::unordered_set<const void*> seen;
  RoleSample r{.step = step, .at = std::move(at)};
  r.parameter = NewBytes(weights, seen);
  r.gradient = NewBytes(Grads(params), seen);
  int64_t state = 0;
  for (const auto& [key, s] : optimizer_.state()) state += NewBytes(StateTensors(*s), seen);
  r.optimizer_state = state;
  r.allocated = CudaAllocated(params);
  return r;
}

std::vector<RoleModule> RoleSampler::ByModule() const {
  std::unordered_set<const void*> seen;
  std::vector<RoleModule> out;
  for (const auto& item : model_.named_parameters()) {
    const std::string& name = item.key();
    const size_t dot = name.rfind('.');
    const std::string owner = dot == std::string::npos ? "(the model itself)" : name.substr(0, dot);
    if (out.empty() || out.back().module != owner) out.push_back({owner});
    RoleModule& m = out.back();
    m.parameter += NewBytes({item.value()}, seen);
    m.gradient += NewBytes({item.value().grad()}, seen);
    m.optimizer_state += NewBytes(StateOf(optimizer_, item.value()), seen);
  }
  return out;
}

}  // namespace trainprof::torchlib
