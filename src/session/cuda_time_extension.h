// GPU time per action (time.cuda_events): the Session attaches this extension, which starts the
// CUDA event pool (record/cuda_events.h) so that every recorded scope marks the GPU stream as it
// begins and ends, and at the end reads the GPU time between each scope's two marks into a
// "gpu_time" section beside the wall-clock time report. This is the asynchronous timing
// anemoi's profiler lists as a limit: a forward pass returns before its kernels finish, so its
// wall time says little about its GPU time.
#pragma once

#include "session/extension.h"

namespace trainprof::session {

class CudaTimeExtension : public Extension {
 public:
  CudaTimeExtension();  // starts the event pool; a failure is reported at finish
  ~CudaTimeExtension() override;
  void OnStep(int64_t) override {}
  void OnStop() override;
  Status OnFinish(FinishContext& ctx) override;
  bool Claims(std::string_view key) const override { return key == "time.cuda_events"; }

  static constexpr int64_t kPairs = int64_t{1} << 16;  // scopes with GPU time per session

 private:
  Status started_;
  bool released_ = false;
};

}  // namespace trainprof::session
