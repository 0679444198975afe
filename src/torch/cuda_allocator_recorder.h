// The CUDA caching allocator over a TorchProfiler run, through a CUDA LibTorch: its figures after
// every step (memory.enabled: the cuda_memory section) and the allocator history of the
// snapshot.* steps, each inside a "ProfilerStep#N" range as torch.profiler marks steps, written as
// memory_snapshot.pickle (memory_snapshot_rank{N}.pickle with several ranks) and analysed into
// the report, as the Python package records them with torch.cuda. With a CPU LibTorch or no GPU
// it records nothing and the report says why (snapshot_needs_cuda).
//
//   CudaAllocatorRecorder r;
//   r.Start(options, diags);            // before the first OnStep
//   r.OnStep(step, diags);              // as each step begins (Extension::OnStep)
//   r.Finish(ctx, rank);                // into the report and the run folder
#pragma once

#include <ATen/record_function.h>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "operators/step_memory_report.h"
#include "report/report.h"
#include "session/extension.h"
#include "trace/inprocess/op_data.h"
#include "trainprof/options.h"

namespace trainprof::torchlib {

// The first of the environment variables `vars` set to an integer, or `fallback`.
int64_t EnvInt(std::initializer_list<const char*> vars, int64_t fallback);

class CudaAllocatorRecorder {
 public:
  void Start(const Options& o, std::vector<report::Diagnostic>& diags);
  // Step `step` begins: the last step's figures; the history starts or is dumped at the
  // window's edges.
  void OnStep(int64_t step, std::vector<report::Diagnostic>& diags);
  void Finish(session::FinishContext& ctx, int64_t rank);

 private:
  void Record(int64_t step, std::vector<report::Diagnostic>& diags);
  void Dump(std::vector<report::Diagnostic>& diags);
  void MarkStep(int64_t step);  // ends the last "ProfilerStep#N" range, begins this one's

  bool per_step_ = false, snapshot_ = false, recording_ = false;
  std::string stacks_;
  int64_t last_step_ = -1, max_entries_ = 0, recorded_from_ = -1;
  StepRange window_{-1, -1};
  std::vector<CudaMemoryStep> cuda_steps_;
  std::string pickle_;
  std::unique_ptr<at::RecordFunction> step_mark_;
};

}  // namespace trainprof::torchlib
