#include "analysis/hta/hta_kernel_annotations.h"

#include <algorithm>
#include <map>

#include "analysis/steps.h"

namespace trainprof::analysis {

namespace {

using TrackKey = std::pair<int64_t, int64_t>;  // pid, tid

struct NoteSpan {
  int64_t ts, end;
  uint32_t event;
};

}  // namespace

std::optional<std::vector<AnnotatedKernel>> HtaKernelsWithAnnotations(const trace::TraceModel& m,
                                                                      const HtaOptions& o) {
  const HtaEvents ev = SelectHtaEvents(m, StepsResult{}, o);
  std::map<TrackKey, std::vector<NoteSpan>> notes;  // the GPU annotations of each track
  bool any = false;
  for (size_t i = 0; i < m.size(); ++i) {
    if (m.kind[i] != trace::EventKind::kGpuUserAnnotation) continue;
    any = true;
    if (ev.times.ts(i) >= ev.cpu_before) continue;
    const trace::Track& t = m.tracks[m.track[i]];
    notes[{t.pid, t.tid}].push_back({ev.times.ts(i), ev.times.end(i), static_cast<uint32_t>(i)});
  }
  if (!any) return std::nullopt;
  std::vector<AnnotatedKernel> out;
  std::map<TrackKey, std::vector<size_t>> by_track;  // rows of `out`, in start order
  std::vector<HtaEv> kernels;
  for (const HtaEv& e : ev.ev)
    if (trace::IsGpuKind(m.kind[e.event]) && m.correlation[e.event] >= 0) kernels.push_back(e);
  std::stable_sort(kernels.begin(), kernels.end(),
                   [](const HtaEv& a, const HtaEv& b) { return a.ts < b.ts; });
  for (const HtaEv& e : kernels) {
    const trace::Track& t = m.tracks[m.track[e.event]];
    by_track[{t.pid, t.tid}].push_back(out.size());
    out.push_back({.ts_ns = e.ts,
                   .dur_ns = e.end - e.ts,
                   .pid = t.pid,
                   .tid = t.tid,
                   .stream = ev.times.stream(e.event),
                   .correlation = m.correlation[e.event],
                   .name = m.name_of(e.event)});
  }
  for (auto& [track, spans] : notes) {
    // Longest first, so that a shorter (inner) annotation overwrites the one around it.
    std::stable_sort(spans.begin(), spans.end(), [](const NoteSpan& a, const NoteSpan& b) {
      return a.end - a.ts > b.end - b.ts;
    });
    auto found = by_track.find(track);
    if (found == by_track.end()) continue;
    const std::vector<size_t>& rows = found->second;
    int64_t longest = 0;
    for (size_t r : rows) longest = std::max(longest, out[r].dur_ns);
    for (const NoteSpan& s : spans) {
      // The kernels that overlap [ts, end) start after ts - longest and before end.
      auto it = std::lower_bound(rows.begin(), rows.end(), s.ts - longest,
                                 [&](size_t r, int64_t t) { return out[r].ts_ns < t; });
      for (; it != rows.end() && out[*it].ts_ns < s.end; ++it)
        if (s.ts < out[*it].ts_ns + out[*it].dur_ns) out[*it].annotation = m.name_of(s.event);
    }
  }
  return out;
}

}  // namespace trainprof::analysis
