// Runs fn(0) .. fn(n - 1) on up to `threads` threads (0: one per core), never more threads than
// items; the calling thread is one of them. Items are handed out one at a time, so uneven items
// (ranks of different sizes) balance. fn must be safe to call concurrently for different items.
//
//   base::ParallelFor(files.size(), 0, [&](size_t i) { results[i] = Read(files[i]); });
#pragma once

#include <cstddef>
#include <functional>

namespace trainprof::base {

void ParallelFor(size_t n, int threads, const std::function<void(size_t)>& fn);

}  // namespace trainprof::base
