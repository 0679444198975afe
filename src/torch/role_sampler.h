// Memory by role of a LibTorch model and its optimizer, exact, by tensor identity (each storage
// once): the parameters and buffers, their gradients, the optimizer's state tensors (Adam's and
// AdamW's moments, SGD's momentum, RMSprop's and Adagrad's buffers). LibTorch has no
// saved-tensor hooks a C++ program can use, so activations and input are not measured; on a GPU
// the allocator's total gives the rest.
//
//   torchlib::RoleSampler roles(*model, optimizer);
//   samples.push_back(roles.Sample(step, "end of step"));
//   modules = roles.ByModule();
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "operators/role_report.h"

namespace trainprof::torchlib {

class RoleSampler {
 public:
  RoleSampler(torch::nn::Module& model, torch::optim::Optimizer& optimizer)
      : model_(model), optimizer_(optimizer) {}

  RoleSample Sample(int64_t step, std::string at) const;
  // Parameters, gradients and optimizer state by the module that owns each parameter.
  std::vector<RoleModule> ByModule() const;

 private:
  torch::nn::Module& model_;
  torch::optim::Optimizer& optimizer_;
};

// The state tensors of one parameter's optimizer state, whatever the optimizer (empty for one
// this does not know, e.g. LBFGS).
std::vector<torch::Tensor> StateTensors(const torch::optim::OptimizerParamState& state);

}  // namespace trainprof::torchlib
