// The live view's memory-creep figure: the process's RSS growth per minute over the last minute,
// told only after a warm-up and over a long enough span, so the growth of a start (imports, the
// first batches, allocator pools filling) is not called a creep.
//
//   RssTrend t;
//   t.Add(now_ns, rss_bytes);                    // once a tick, ns since the run's start
//   std::optional<double> g = t.GrowthPerMinute();  // nullopt until it can be told
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <utility>

namespace trainprof::session {

class RssTrend {
 public:
  static constexpr int64_t kWarmupNs = 30'000'000'000;   // samples before this are start-up
  static constexpr int64_t kMinSpanNs = 30'000'000'000;  // the least span a growth is told over
  static constexpr int64_t kWindowNs = 60'000'000'000;   // the span kept: the last minute

  void Add(int64_t now_ns, double rss_bytes);
  std::optional<double> GrowthPerMinute() const;

 private:
  std::deque<std::pair<int64_t, double>> samples_;  // (ns, bytes), after the warm-up
};

}  // namespace trainprof::session
