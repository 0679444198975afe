// The job's data loader: batches of normalised samples from a SampleSource, in a per-epoch
// order that is shuffled (data.shuffle) and sharded across ranks as PyTorch's
// DistributedSampler does, produced by data.num_workers worker threads that each keep up to
// data.prefetch batches ready, and handed out strictly in order, as torch.utils.data.DataLoader
// does. With 0 workers the calling thread reads each batch itself inside Next().
//
//   jobs::BatchLoader loader(*source, {.batch_size = 64, .num_workers = 2});
//   loader.StartEpoch(epoch, /*limit_batches=*/0);
//   jobs::RawBatch b;
//   while (true) {
//     TRAINPROF_ASSIGN_OR_RETURN(bool got, loader.Next(&b));
//     if (!got) break;
//     ...   // b.images: n * rows * cols floats, b.labels: n labels
//   }
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "jobs/dataset_formats.h"

namespace trainprof::jobs {

struct LoaderOptions {
  int64_t batch_size = 64;
  bool shuffle = false;
  uint64_t seed = 0;
  int64_t num_workers = 0;
  int64_t prefetch = 2;  // batches each worker keeps ready (DataLoader's prefetch_factor)
  int64_t delay_ns = 0;  // spent (busy) after reading each batch (data.delay_ms)
  int64_t rank = 0;      // this rank's shard of world_size
  int64_t world_size = 1;
  double mean = 0.2860, std = 0.3530;  // Fashion-MNIST's, applied after scaling to [0, 1]
};

struct RawBatch {
  int64_t n = 0;
  std::vector<float> images;    // n * rows * cols, normalised
  std::vector<int64_t> labels;  // n
};

class BatchLoader {
 public:
  BatchLoader(const SampleSource& source, LoaderOptions options);
  ~BatchLoader();  // stops and joins the workers
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  // Batches per epoch on this rank: ceil(ceil(count / world_size) / batch_size).
  int64_t batches() const;
  // Samples of this rank per epoch (the shard, padded as DistributedSampler pads).
  int64_t shard_size() const { return shard_size_; }
  // Starts an epoch of min(limit_batches, batches()) batches (0 = all); the workers begin
  // loading at once. Any batches of the previous epoch not taken are discarded.
  void StartEpoch(int64_t epoch, int64_t limit_batches);
  // The next batch of the epoch: true, or false after the last one. Errors: the source's (a
  // file unreadable or corrupt), naming the file; the epoch then ends.
  StatusOr<bool> Next(RawBatch* out);

 private:
  struct Slot {
    Status status;
    RawBatch batch;
  };
  Status Load(const std::vector<int64_t>& order, int64_t batch_index, RawBatch* out) const;
  void WorkerLoop(int64_t worker);
  void StopWorkers();

  const SampleSource& src_;
  LoaderOptions o_;
  int64_t shard_size_ = 0;
  // This epoch's sample indices of this rank; replaced (never changed) by StartEpoch, so a
  // worker still loading a batch of the previous epoch reads a consistent copy.
  std::shared_ptr<const std::vector<int64_t>> order_;

  std::mutex mu_;
  std::condition_variable work_cv_, ready_cv_;
  int64_t epoch_gen_ = 0;                // bumped by StartEpoch so workers drop stale batches
  int64_t total_ = 0;                    // batches this epoch
  int64_t consumed_ = 0;                 // batches handed out by Next()
  std::vector<int64_t> next_of_worker_;  // next batch each worker produces
  std::map<int64_t, Slot> ready_;        // loaded batches not yet taken, by batch index
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace trainprof::jobs
