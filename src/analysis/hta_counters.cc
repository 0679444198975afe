#include "analysis/hta_counters.h"

#include <algorithm>
#include <map>

#include "analysis/kernel_class.h"

namespace trainprof::analysis {

namespace {

struct Change {
  int64_t ts;
  int delta;
};

StreamQueue Sweep(int64_t stream, std::vector<Change>& c, int64_t full) {
  // At one time, starts before launches: an operation never counts as waiting behind itself.
  std::sort(c.begin(), c.end(), [](const Change& a, const Change& b) {
    return a.ts != b.ts ? a.ts < b.ts : a.delta < b.delta;
  });
  StreamQueue q;
  q.stream = stream;
  int64_t length = 0;
  double sum = 0, area = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    length += c[i].delta;
    q.changes++;
    sum += static_cast<double>(length);
    q.max_length = std::max(q.max_length, length);
    if (i + 1 < c.size()) {
      const int64_t dt = c[i + 1].ts - c[i].ts;
      area += static_cast<double>(length) * static_cast<double>(dt);
      if (length >= full) q.blocked_ns += dt;
    }
  }
  q.span_ns = c.back().ts - c.front().ts;
  q.mean_length = sum / static_cast<double>(q.changes);
  q.time_mean_length = q.span_ns > 0 ? area / static_cast<double>(q.span_ns) : 0;
  return q;
}

}  // namespace

std::vector<StreamQueue> QueueLengthSummary(const trace::TraceModel& m, int64_t full) {
  std::map<int64_t, std::vector<Change>> by_stream;
  std::vector<int8_t> is_launch(m.names.size(), -1);
  for (size_t i = 0; i < m.size(); ++i) {
    if (!trace::IsGpuKind(m.kind[i]) || m.launcher.empty() || m.launcher[i] < 0) continue;
    const int32_t l = m.launcher[i];
    int8_t& il = is_launch[m.name[l]];
    if (il < 0) il = IsLaunchCallName(m.name_of(l), false) ? 1 : 0;
    if (!il) continue;
    std::vector<Change>& c = by_stream[m.stream_of(i)];
    c.push_back({m.ts_ns[l], +1});
    c.push_back({m.ts_ns[i], -1});
  }
  std::vector<StreamQueue> out;
  for (auto& [stream, changes] : by_stream) out.push_back(Sweep(stream, changes, full));
  return out;
}

}  // namespace trainprof::analysis
