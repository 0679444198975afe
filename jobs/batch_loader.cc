#include "jobs/batch_loader.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <random>
#include <thread>

#include "trainprof/scope.h"

namespace trainprof::jobs {

BatchLoader::BatchLoader(const SampleSource& source, LoaderOptions options)
    : src_(source), o_(options) {
  o_.world_size = std::max<int64_t>(1, o_.world_size);
  o_.batch_size = std::max<int64_t>(1, o_.batch_size);
  o_.prefetch = std::max<int64_t>(1, o_.prefetch);
  shard_size_ = (src_.count() + o_.world_size - 1) / o_.world_size;
  order_ = std::make_shared<std::vector<int64_t>>();
  next_of_worker_.assign(static_cast<size_t>(std::max<int64_t>(0, o_.num_workers)), 0);
  for (int64_t w = 0; w < o_.num_workers; ++w) workers_.emplace_back([this, w] { WorkerLoop(w); });
}

BatchLoader::~BatchLoader() { StopWorkers(); }

void BatchLoader::StopWorkers() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& t : workers_) t.join();
  workers_.clear();
}

int64_t BatchLoader::batches() const { return (shard_size_ + o_.batch_size - 1) / o_.batch_size; }

void BatchLoader::StartEpoch(int64_t epoch, int64_t limit_batches) {
  // DistributedSampler: one permutation shared by every rank (seeded by seed + epoch), padded
  // with its first indices to a multiple of world_size, and rank r takes every world_size-th.
  std::vector<int64_t> all(static_cast<size_t>(src_.count()));
  std::iota(all.begin(), all.end(), 0);
  if (o_.shuffle) {
    std::mt19937_64 rng(o_.seed + static_cast<uint64_t>(epoch));
    std::shuffle(all.begin(), all.end(), rng);
  }
  auto order = std::make_shared<std::vector<int64_t>>();
  order->reserve(static_cast<size_t>(shard_size_));
  for (int64_t i = o_.rank; i < shard_size_ * o_.world_size; i += o_.world_size) {
    order->push_back(all[static_cast<size_t>(i % src_.count())]);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++epoch_gen_;
    order_ = std::move(order);
    total_ = limit_batches > 0 ? std::min(limit_batches, batches()) : batches();
    consumed_ = 0;
    for (size_t w = 0; w < next_of_worker_.size(); ++w)
      next_of_worker_[w] = static_cast<int64_t>(w);
    ready_.clear();
  }
  work_cv_.notify_all();
}

Status BatchLoader::Load(const std::vector<int64_t>& order, int64_t batch_index,
                         RawBatch* out) const {
  const int64_t begin = batch_index * o_.batch_size;
  const int64_t n = std::min(o_.batch_size, static_cast<int64_t>(order.size()) - begin);
  const int64_t pixels = src_.pixels();
  out->n = n;
  out->images.resize(static_cast<size_t>(n * pixels));
  out->labels.resize(static_cast<size_t>(n));
  std::vector<uint8_t> raw(static_cast<size_t>(pixels));
  const float scale = static_cast<float>(1.0 / (255.0 * o_.std));
  const float shift = static_cast<float>(o_.mean / o_.std);
  for (int64_t i = 0; i < n; ++i) {
    TRAINPROF_RETURN_IF_ERROR(src_.Read(order[static_cast<size_t>(begin + i)], raw.data(),
                                        &out->labels[static_cast<size_t>(i)]));
    float* dst = out->images.data() + i * pixels;
    for (int64_t p = 0; p < pixels; ++p) dst[p] = static_cast<float>(raw[p]) * scale - shift;
  }
  // data.delay_ms: busy, like decoding work. A sleep would add the scheduler's wake-up latency,
  // several milliseconds on a loaded machine instead of the delay asked for.
  if (o_.delay_ns > 0) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(o_.delay_ns);
    while (std::chrono::steady_clock::now() < until) {
    }
  }
  return Status::Ok();
}

void BatchLoader::WorkerLoop(int64_t w) {
  SetThreadName(fmt::format("dataloader-{}", w));
  const int64_t workers = o_.num_workers;
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    work_cv_.wait(lock, [&] {
      const int64_t b = next_of_worker_[static_cast<size_t>(w)];
      return stop_ || (b < total_ && b < consumed_ + workers * o_.prefetch);
    });
    if (stop_) return;
    const int64_t b = next_of_worker_[static_cast<size_t>(w)];
    next_of_worker_[static_cast<size_t>(w)] += workers;
    const int64_t gen = epoch_gen_;
    std::shared_ptr<const std::vector<int64_t>> order = order_;
    lock.unlock();
    Slot slot;
    {
      TRAINPROF_SCOPE("[DataLoader].worker_batch");
      slot.status = Load(*order, b, &slot.batch);
    }
    lock.lock();
    if (gen != epoch_gen_) continue;  // a batch of an epoch that was abandoned
    ready_[b] = std::move(slot);
    ready_cv_.notify_all();
  }
}

StatusOr<bool> BatchLoader::Next(RawBatch* out) {
  if (o_.num_workers <= 0) {
    if (consumed_ >= total_) return false;
    Status s = Load(*order_, consumed_, out);
    ++consumed_;
    if (!s.ok()) {
      total_ = consumed_;
      return s;
    }
    return true;
  }
  std::unique_lock<std::mutex> lock(mu_);
  if (consumed_ >= total_) return false;
  ready_cv_.wait(lock, [&] { return ready_.count(consumed_) > 0; });
  auto it = ready_.find(consumed_);
  Slot slot = std::move(it->second);
  ready_.erase(it);
  ++consumed_;
  if (!slot.status.ok()) {
    total_ = consumed_;  // the epoch ends here; workers stop loading it
    ready_.clear();
  }
  lock.unlock();
  work_cv_.notify_all();
  if (!slot.status.ok()) return slot.status;
  *out = std::move(slot.batch);
  return true;
}

}  // namespace trainprof::jobs
