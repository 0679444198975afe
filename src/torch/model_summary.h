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

#include "report/report.h"
#include "trainprof/status.h"

namespace trainprof::torchlib {

struct ModuleInfo {
  std::string name;  // dotted path from the root ("features.0"); "" for the root
  std::string type;  // "Conv2d", "Linear", the class name of a user module without "Impl"
  int depth = 0;     // 0 = root
  int index = 0;     // 1-based position among its siblings (torchinfo's depth-idx)
  bool leaf = true;
  bool has_shapes = false;
  std::vector<int64_t> input_shape, output_shape;
  int64_t output_bytes = 0;
  int64_t params = 0;  // its own parameters, not its children's
  int64_t trainable = 0;
  int64_t param_bytes = 0;
  int64_t mult_adds = 0;  // for its own parameters, from the output shape (torchinfo's rule)
};

struct ModelSummary {
  std::string model_type;
  std::vector<ModuleInfo> modules;  // pre-order, root first
  int64_t total_params = 0, trainable_params = 0, total_mult_adds = 0;
  int64_t input_bytes = 0;
  int64_t forward_backward_bytes = 0;  // 2 x the output bytes of the leaf modules with shapes
  int64_t param_bytes = 0;
  std::vector<std::string> notes;  // what could not be seen
  int64_t EstimatedTotalBytes() const { return input_bytes + forward_backward_bytes + param_bytes; }
};

// Runs `forward` once on the calling thread, in eval mode and without gradients (the module's
// training flag is restored), and fills `out`. Errors: the forward threw (the LibTorch message);
// `out` then still has the module tree and parameters, without shapes, and a note saying why.
Status SummarizeModule(torch::nn::Module& module, const std::vector<torch::Tensor>& inputs,
                       const std::function<torch::Tensor()>& forward, ModelSummary* out);

// The "model_summary" section: the module table down to `depth` levels, the totals as metrics.
void AddModelSummarySection(const ModelSummary& s, int64_t depth, report::Report& report);

}  // namespace trainprof::torchlib
