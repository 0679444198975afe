// GPU work overlapping on one stream (stream_overlap.h).
#include "trace/stream_overlap.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <utility>
#include <vector>

namespace trainprof::trace {
namespace {

using StreamKey = std::pair<int64_t, int64_t>;  // device, stream

// Each stream's GPU events in start order (file order, which is start order per stream in
// Kineto's traces, sorted only where it is not). Streams are looked up per track, not per
// event: a trace has a few dozen tracks and may have millions of kernels.
std::vector<std::vector<uint32_t>> ByStream(const TraceModel& m) {
  std::map<StreamKey, size_t> stream_of;
  std::vector<size_t> group(m.tracks.size());
  for (size_t t = 0; t < m.tracks.size(); ++t)
    group[t] = stream_of.try_emplace({m.tracks[t].device, m.tracks[t].stream}, stream_of.size())
                   .first->second;
  std::vector<std::vector<uint32_t>> out(stream_of.size());
  for (size_t i = 0; i < m.size(); ++i)
    if (IsGpuKind(m.kind[i]) && m.stream_of(i) >= 0)
      out[group[m.track[i]]].push_back(static_cast<uint32_t>(i));
  for (std::vector<uint32_t>& ev : out) {
    auto before = [&](uint32_t a, uint32_t b) { return m.ts_ns[a] < m.ts_ns[b]; };
    if (!std::ranges::is_sorted(ev, before)) std::ranges::stable_sort(ev, before);
  }
  return out;
}

}  // namespace

StreamOverlap NoteStreamOverlaps(TraceModel& m) {
  StreamOverlap o;
  for (const std::vector<uint32_t>& ev : ByStream(m)) {
    int64_t end = std::numeric_limits<int64_t>::min();
    for (uint32_t i : ev) {
      if (m.ts_ns[i] < end) {
        ++o.events;
        o.overlap_ns += std::min(end, m.end_ns(i)) - m.ts_ns[i];
      }
      end = std::max(end, m.end_ns(i));
    }
  }
  if (o.events > 0)
    m.AddDiagnostic(base::DiagnosticId::kKernelsOverlapOnStream, o.events,
                    fmt::format("{}: {} GPU events start before earlier work on their stream "
                                "ends ({:.3f} ms shared); busy time counts that time once",
                                m.path, o.events, static_cast<double>(o.overlap_ns) / 1e6));
  return o;
}

}  // namespace trainprof::trace
