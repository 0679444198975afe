#include "session/rss_trend.h"

namespace trainprof::session {

void RssTrend::Add(int64_t now_ns, double rss_bytes) {
  if (now_ns < kWarmupNs) return;
  samples_.emplace_back(now_ns, rss_bytes);
  while (samples_.size() > 2 && now_ns - samples_.front().first > kWindowNs) samples_.pop_front();
}

std::optional<double> RssTrend::GrowthPerMinute() const {
  if (samples_.size() < 2) return std::nullopt;
  const int64_t span = samples_.back().first - samples_.front().first;
  if (span < kMinSpanNs) return std::nullopt;
  return (samples_.back().second - samples_.front().second) * static_cast<double>(kWindowNs) /
         static_cast<double>(span);
}

}  // namespace trainprof::session
