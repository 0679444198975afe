#include "analysis/hta/hta_counters.h"

#include <algorithm>
#include <map>

#include "analysis/kernel_class.h"
#include "base/radix_sort.h"

namespace trainprof::analysis {

namespace {

// One stream's launch times (+1 each) and GPU start times (-1 each): 8 bytes a change, where a
// 16-byte (time, delta) record each was 18 MB on a 1 GB trace.
struct StreamTimes {
  std::vector<int64_t> launches, starts;
};

StreamQueue Sweep(int64_t stream, StreamTimes& t, int64_t full) {
  // Both are usually in order already (launches on a thread, starts on a stream); when not, a
  // radix sort (std::sort of a 1 GB trace's million launch times was 25 ms).
  for (std::vector<int64_t>* v : {&t.launches, &t.starts})
    if (!std::is_sorted(v->begin(), v->end())) base::RadixSortBy(*v, [](int64_t x) { return x; });
  const std::vector<int64_t>&l = t.launches, &s = t.starts;
  StreamQueue q;
  q.stream = stream;
  int64_t length = 0;
  double sum = 0, area = 0;
  size_t i = 0, j = 0;
  int64_t prev = 0;
  while (i < l.size() || j < s.size()) {
    // At one time, starts before launches: an operation never counts as waiting behind itself.
    const bool start = j < s.size() && (i == l.size() || s[j] <= l[i]);
    const int64_t ts = start ? s[j++] : l[i++];
    if (q.changes > 0) {
      area += static_cast<double>(length) * static_cast<double>(ts - prev);
      if (length >= full) q.blocked_ns += ts - prev;
    }
    length += start ? -1 : 1;
    q.changes++;
    sum += static_cast<double>(length);
    q.max_length = std::max(q.max_length, length);
    prev = ts;
  }
  q.span_ns = std::max(l.back(), s.back()) - std::min(l.front(), s.front());
  q.mean_length = sum / static_cast<double>(q.changes);
  q.time_mean_length = q.span_ns > 0 ? area / static_cast<double>(q.span_ns) : 0;
  return q;
}

}  // namespace

std::vector<StreamQueue> QueueLengthSummary(const trace::TraceModel& m, int64_t full) {
  std::map<int64_t, StreamTimes> by_stream;
  std::vector<int8_t> is_launch(m.names.size(), -1);
  for (size_t i = 0; i < m.size(); ++i) {
    if (!trace::IsGpuKind(m.kind[i]) || m.launcher.empty() || m.launcher[i] < 0) continue;
    const int32_t l = m.launcher[i];
    int8_t& il = is_launch[m.name[l]];
    if (il < 0) il = IsLaunchCallName(m.name_of(l), false) ? 1 : 0;
    if (!il) continue;
    StreamTimes& t = by_stream[m.stream_of(i)];
    t.launches.push_back(m.ts_ns[l]);
    t.starts.push_back(m.ts_ns[i]);
  }
  std::vector<StreamQueue> out;
  for (auto& [stream, times] : by_stream) {
    out.push_back(Sweep(stream, times, full));
    times = StreamTimes();  // let it go before the next stream's sweep
  }
  return out;
}

}  // namespace trainprof::analysis
