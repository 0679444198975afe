// LibTorch depth for a trainprof Session: the operator and memory report (memory.*), the model
// summary (model_summary.*) and, in CUDA builds, the CUDA memory snapshot (snapshot.*). Any
// LibTorch program can attach it; `trainprof profile`'s job does. Link trainprof::torch.
//
//   auto session = trainprof::Session::Create(options);          // memory.enabled: true, ...
//   auto torch_prof = trainprof::TorchProfiler::Attach(**session);   // before the model is built
//   if (!torch_prof.ok()) ...;                                   // see Attach()
//   Net model;
//   (void)(*torch_prof)->SummarizeModel(model, first_batch);     // model_summary.enabled
//   (*torch_prof)->TrackRoles(*model, optimizer);                // memory by role
//   for (...) { ...forward, backward, step...; (*session)->Step(); }
//   (*session)->Finish();   // adds the "operators" and "model_summary" sections
#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <vector>

#include "trainprof/session.h"
#include "trainprof/status.h"

namespace trainprof {

class TorchProfilerImpl;

class TorchProfiler {
 public:
  // Attaches to `session`, reading its memory.*, model_summary.* and snapshot.* options. With
  // memory.enabled, the operator observer runs in steps [0, memory.warmup + memory.steps) and
  // the report covers the last memory.steps of them; allocations are tracked from this call on,
  // so attach before the model and the data are created.
  // Errors (FailedPrecondition): another TorchProfiler is attached in this process; LibTorch's
  // own profiler is enabled on this thread; the session has finished.
  static StatusOr<std::unique_ptr<TorchProfiler>> Attach(Session& session);
  // Stops observing; what was recorded still goes into the session's report at Finish().
  // Destroy it on the thread that attached it.
  ~TorchProfiler();
  TorchProfiler(const TorchProfiler&) = delete;
  TorchProfiler& operator=(const TorchProfiler&) = delete;

  // The model summary (only with model_summary.enabled; otherwise does nothing). Runs
  // model->forward(inputs...) once more, in eval mode and without gradients, to capture shapes;
  // the operators of that pass are not observed. Errors: the forward threw (InvalidArgument
  // with LibTorch's message); the summary then still lists the modules and parameters, and the
  // report says why the shapes are missing. Training is not affected either way.
  template <typename ModuleHolder, typename... Inputs>
  Status SummarizeModel(ModuleHolder& model, const Inputs&... inputs) {
    return SummarizeModule(*model, {inputs...}, [&] { return model->forward(inputs...); });
  }
  // The same for any module: `forward` runs the pass on `inputs` and returns its output.
  Status SummarizeModule(torch::nn::Module& module, std::vector<torch::Tensor> inputs,
                         const std::function<torch::Tensor()>& forward);

  // Memory by role (with memory.enabled or the live view; else nothing): at the end of each step of
  // the operator window, the bytes of the model's parameters and buffers, their gradients and
  // the optimizer's state (Adam, AdamW, SGD, RMSprop, Adagrad), each storage once, and on one
  // GPU the allocator's total; the "memory_by_role" section of the report; with the live view
  // on, the same figures at a step's end once a live.interval_s. Keep `model` and `optimizer`
  // alive until the last Step().
  void TrackRoles(torch::nn::Module& model, torch::optim::Optimizer& optimizer);

 private:
  explicit TorchProfiler(std::shared_ptr<TorchProfilerImpl> impl);
  std::shared_ptr<TorchProfilerImpl> impl_;
};

}  // namespace trainprof
