// Data-parallel training over LibTorch's c10d process groups: a TCPStore at MASTER_ADDR:
// MASTER_PORT (served by rank 0, or by the launcher's agent), a Gloo process group on CPU, the
// gradient all-reduce after backward, a clock-offset measurement against rank 0, and the
// exchange of each rank's reports through the store. Every failure of a peer (dead, hung,
// unreachable) surfaces as a Status within distributed.timeout_s instead of a hang.
//
//   auto dist = jobs::Distributed::Init(env, cfg.distributed);   // blocks until all ranks join
//   TRAINPROF_RETURN_IF_ERROR((*dist)->AllReduceMean(grads));
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "jobs/job_config.h"
#include "jobs/launch_env.h"
#include "trainprof/status.h"

namespace at {
class Tensor;  // torch::Tensor; this header is included where LibTorch's headers are not
}  // namespace at

namespace trainprof::jobs {

// This rank's steady clock relative to rank 0's: rank 0 time = own time + offset_ns, within
// +-error_ns (half the shortest of several round trips, Cristian's algorithm).
struct ClockOffset {
  int64_t offset_ns = 0;
  int64_t error_ns = 0;
  int64_t rounds = 0;
};

class Distributed {
 public:
  // Connects to the store and builds the process group. Errors: the store not reachable or a
  // rank missing within the timeout (Unavailable, naming the address), an unknown or unbuilt
  // backend (Unimplemented for nccl without a CUDA LibTorch).
  static StatusOr<std::unique_ptr<Distributed>> Init(const LaunchEnv& env,
                                                     const DistributedConfig& cfg);
  ~Distributed();

  int64_t rank() const { return env_.rank; }
  int64_t world_size() const { return env_.world_size; }
  const LaunchEnv& env() const { return env_; }
  std::string backend() const { return cfg_.backend; }
  // distributed.timeout_s: how long any wait on the other ranks may take.
  std::chrono::milliseconds timeout() const;

  // Sums the tensors over all ranks in place and divides by the world size, as DDP averages
  // gradients (one flattened buffer, one collective). `*stop` goes in as this rank's wish to
  // stop (a signal) and comes out true when any rank wished it, so all stop at the same step.
  // Errors: a peer died or timed out.
  Status AllReduceMean(const std::vector<at::Tensor>& tensors, bool* stop);
  // Sums in place over all ranks.
  Status AllReduceSum(at::Tensor& t);
  // Copies rank 0's values into `tensors` on every rank (initial weights).
  Status Broadcast(const std::vector<at::Tensor>& tensors);
  // Measures this rank's steady-clock offset to rank 0 (a collective: every rank calls it).
  StatusOr<ClockOffset> MeasureClockOffset(int rounds = 16);

  // Store exchange. Set() publishes; Get() waits up to the timeout for a key set by any rank;
  // Check() says whether it is set. Errors: the store is gone (rank 0 died).
  Status Set(const std::string& key, const std::string& value);
  StatusOr<std::string> Get(const std::string& key, std::chrono::milliseconds timeout);
  StatusOr<bool> Check(const std::string& key);

 private:
  struct State;
  Distributed(LaunchEnv env, DistributedConfig cfg, std::unique_ptr<State> s);
  Status Failed(const std::string& what, const std::exception& e) const;

  LaunchEnv env_;
  DistributedConfig cfg_;
  std::unique_ptr<State> s_;
};

}  // namespace trainprof::jobs
