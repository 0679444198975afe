// The model summary's data (torchinfo's columns for each module) and its report section, shared
// by the LibTorch adapter (src/torch/model_summary.h, shapes from the operators of a forward
// pass) and the Python package (trainprof.torch, shapes from forward hooks). No LibTorch types.
//
//   torchlib::ModelSummary s = ...;        // modules in pre-order, root first
//   torchlib::FinishTotals(s);              // mult-adds and totals
//   Status st = torchlib::AddModelSummary(s, /*depth=*/3, run_dir, report);  // + model_summary.txt
#pragma once

#include <cstdint>
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

// torchinfo's rule, from the output shape: convolutions count every output position of every
// sample; Linear one use per row of the output; RNNs per sample and time step; other layers with
// parameters one use per sample. Leaves mult_adds at 0 without shapes or parameters.
void ComputeMultAdds(ModuleInfo& m);

// Computes each module's mult-adds and the summary's totals (params, trainable, sizes; the
// forward/backward pass size is 2 x the output bytes of the leaves with shapes). Returns how many
// leaf modules other than the root have no shapes.
int64_t FinishTotals(ModelSummary& s);

// The "model_summary" section: the module table down to `depth` levels, the totals as metrics.
void AddModelSummarySection(const ModelSummary& s, int64_t depth, report::Report& report);

// Adds the section and writes it, as the terminal shows it, to <run_dir>/model_summary.txt.
// Errors: the file could not be written (the section is still added).
Status AddModelSummary(const ModelSummary& s, int64_t depth, const std::string& run_dir,
                       report::Report& report);

}  // namespace trainprof::torchlib
