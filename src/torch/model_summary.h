// A torchinfo-like model summary of a LibTorch module: the module tree, parameters, and the
// input and output shapes of one real forward pass.
//
// LibTorch modules have no forward hooks, so shapes are captured from the top-level operators
// of the forward pass (a thread-local RecordFunction callback): a module that owns parameters
// gets as input the first tensor its operators take that is not a parameter (or a view of one),
// and as output the output of its last operator (aten::conv2d; t + addmm for Linear; called
// twice: the first call's input, the last call's output); a Sequential gets its first child's
// input and its last child's output; the root gets the given inputs and the forward's result.
// Modules without parameters (ReLU, MaxPool2d, Dropout as modules) and other containers show no
// shapes.
//
//   torchlib::ModelSummary s;
//   Status st = torchlib::SummarizeModule(*model, {batch}, [&] { return model->forward(batch); },
//                                         &s);   // s holds the tree even when st is an error
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "operators/module_table.h"
#include "trainprof/status.h"

namespace trainprof::torchlib {

// Runs `forward` once on the calling thread, in eval mode and without gradients (the module's
// training flag is restored), and fills `out`. Errors: the forward threw (the LibTorch message);
// `out` then still has the module tree and parameters, without shapes, and a note saying why.
Status SummarizeModule(torch::nn::Module& module, const std::vector<torch::Tensor>& inputs,
                       const std::function<torch::Tensor()>& forward, ModelSummary* out);

}  // namespace trainprof::torchlib
