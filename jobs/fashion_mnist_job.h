// The built-in training job of `trainprof profile`: the CNN of the PyTorch profiler tutorial
// (CIFAR10CNN, adapted to 28x28x1) trained on Fashion-MNIST with Adam, a training loop and a
// validation loop per epoch, instrumented with trainprof's public API under Lightning's action
// names.
//
//   jobs::JobConfig cfg = ...;
//   TRAINPROF_ASSIGN_OR_RETURN(jobs::FashionMnistData data, jobs::LoadData(cfg.data));
//   TRAINPROF_ASSIGN_OR_RETURN(jobs::JobResult res, jobs::RunFashionMnist(cfg, data, session));
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "jobs/dataset_formats.h"
#include "jobs/job_config.h"
#include "trainprof/session.h"

namespace trainprof::jobs {

struct FashionMnistData {
  std::unique_ptr<SampleSource> train;
  std::unique_ptr<SampleSource> test;
};
// Opens both splits in data.format. Errors: see OpenSource().
StatusOr<FashionMnistData> LoadData(const DataConfig& data);

// Whether training.device can be had here (and, with several ranks, whether
// distributed.backend can use it): FailedPrecondition saying why not, before anything runs.
Status CheckTrainingDevice(const JobConfig& cfg, bool ranks);

struct JobResult {
  int64_t train_steps = 0;
  int64_t val_steps = 0;
  double last_train_loss = 0;
  double val_loss = 0;      // of the last validation
  double val_accuracy = 0;  // 0-1, of the last validation
  int stop_signal = 0;      // the signal that stopped training early, 0 when it ran to the end
  bool stopped_by_other_rank = false;  // another rank was stopped by a signal, so this one was
};

// Set by a signal handler; the job stops at the next batch boundary when it is non-zero.
extern std::atomic<int> g_stop_signal;

class Distributed;  // jobs/distributed.h

// Trains. With `dist` (a multi-rank run), each rank trains on its shard, the gradients are
// averaged over the ranks after backward ("[DDP].all_reduce_gradients", a communication
// action) and the validation figures are summed over the ranks. Errors: LibTorch failures,
// a data file that cannot be read, a peer rank that died or timed out.
StatusOr<JobResult> RunFashionMnist(const JobConfig& cfg, const FashionMnistData& data,
                                    Session& session, Distributed* dist = nullptr);

}  // namespace trainprof::jobs
