// An append-only log written by one thread and read by others while it grows: values go into
// fixed-size chunks allocated as needed, up to a capacity; the count is published with a release
// store, so a reader that loads it with acquire sees complete values. Appending never locks and
// never moves a value; past the capacity (or when memory runs out) values are counted as dropped.
// Reset() empties it and keeps the chunks already allocated for the next round.
//
//   base::PublishedLog<Ev> log(/*capacity=*/1 << 20);
//   log.Append(ev);                       // owner thread
//   std::vector<Ev> copy; log.CopyTo(copy);   // any thread
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <vector>

namespace trainprof::base {

template <typename T, size_t kChunk = 4096>
class PublishedLog {
 public:
  explicit PublishedLog(int64_t capacity) { Reset(capacity); }
  ~PublishedLog() { FreeChunks(); }
  PublishedLog(const PublishedLog&) = delete;
  PublishedLog& operator=(const PublishedLog&) = delete;

  // Empties the log for a new capacity. No reader may run meanwhile.
  void Reset(int64_t capacity) {
    capacity_ = static_cast<size_t>(std::max<int64_t>(1, capacity));
    const size_t chunks = (capacity_ + kChunk - 1) / kChunk;
    if (chunks != max_chunks_) {
      FreeChunks();
      chunks_ = std::make_unique<std::atomic<T*>[]>(chunks);
      for (size_t i = 0; i < chunks; ++i) chunks_[i].store(nullptr, std::memory_order_relaxed);
      max_chunks_ = chunks;
    }
    count_.store(0, std::memory_order_release);
    dropped_.store(0, std::memory_order_relaxed);
    cur_ = end_ = nullptr;
  }

  // Owner thread only.
  void Append(const T& v) noexcept {
    if (__builtin_expect(cur_ == end_, 0) && !NextChunk()) {
      dropped_.store(dropped_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      return;
    }
    *cur_++ = v;
    count_.store(count_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  }

  // Any thread: appends the values published so far to `out`.
  void CopyTo(std::vector<T>& out) const {
    const size_t n = count_.load(std::memory_order_acquire);
    out.reserve(out.size() + n);
    for (size_t c = 0; c * kChunk < n; ++c) {
      const T* chunk = chunks_[c].load(std::memory_order_acquire);
      out.insert(out.end(), chunk, chunk + std::min(kChunk, n - c * kChunk));
    }
  }
  // Any thread: calls f(value) for each value published from index `from` on; returns the
  // count published, the next call's `from`.
  template <typename F>
  size_t ForEachFrom(size_t from, F&& f) const {
    const size_t n = count_.load(std::memory_order_acquire);
    for (size_t i = from; i < n; ++i)
      f(chunks_[i / kChunk].load(std::memory_order_acquire)[i % kChunk]);
    return n;
  }
  size_t size() const { return count_.load(std::memory_order_acquire); }
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

 private:
  bool NextChunk() noexcept {
    const size_t n = count_.load(std::memory_order_relaxed);
    const size_t c = n / kChunk;
    if (c >= max_chunks_ || n >= capacity_) return false;
    T* chunk = chunks_[c].load(std::memory_order_relaxed);  // kept by Reset()
    if (chunk == nullptr) {
      chunk = new (std::nothrow) T[kChunk];
      if (chunk == nullptr) return false;
      chunks_[c].store(chunk, std::memory_order_release);
    }
    cur_ = chunk;
    end_ = chunk + std::min(kChunk, capacity_ - n);
    return true;
  }

  void FreeChunks() {
    for (size_t i = 0; i < max_chunks_; ++i) delete[] chunks_[i].load(std::memory_order_relaxed);
  }

  size_t capacity_ = 0;
  size_t max_chunks_ = 0;
  std::unique_ptr<std::atomic<T*>[]> chunks_;
  T* cur_ = nullptr;
  T* end_ = nullptr;
  std::atomic<size_t> count_{0};
  std::atomic<uint64_t> dropped_{0};
};

}  // namespace trainprof::base
