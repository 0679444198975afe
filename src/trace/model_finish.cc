#include "trace/model_finish.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>

#include "trace/devices.h"
#include "trace/read_options.h"

namespace trainprof::trace {
namespace {

// Each device's peak of allocated bytes from the deltas, where the model has none.
void PeaksFromDeltas(TraceModel& m, std::string_view file, std::vector<MemoryDelta> deltas) {
  std::stable_sort(deltas.begin(), deltas.end(),
                   [](const MemoryDelta& a, const MemoryDelta& b) { return a.ts_ns < b.ts_ns; });
  std::map<int64_t, std::pair<int64_t, int64_t>> curve;  // device -> (now, peak)
  for (const MemoryDelta& d : deltas) {
    auto& [now, peak] = curve[d.device];
    now += d.bytes;
    peak = std::max(peak, now);
  }
  auto& peaks = m.peak_allocated_bytes;
  for (const auto& entry : curve) {
    const int64_t dev = entry.first;
    if (std::any_of(peaks.begin(), peaks.end(), [dev](const auto& p) { return p.first == dev; }))
      continue;
    peaks.emplace_back(dev, entry.second.second);
    m.AddDiagnostic(
        base::DiagnosticId::kMemoryFromDeltas, 1,
        fmt::format("{}: the {} memory peak was rebuilt from the [memory] events' Bytes changes "
                    "(the trace has no Total Allocated): it counts from the trace's start, so "
                    "memory allocated before profiling began is not in it",
                    file, dev < 0 ? std::string("CPU") : fmt::format("GPU {}", dev)));
  }
}

}  // namespace

void RaisePeak(TraceModel& m, int64_t device, int64_t total_allocated) {
  auto& peaks = m.peak_allocated_bytes;
  auto it = std::ranges::find_if(peaks, [device](const auto& p) { return p.first == device; });
  if (it == peaks.end())
    peaks.emplace_back(device, total_allocated);
  else
    it->second = std::max(it->second, total_allocated);
}

void NameRank(TraceModel& m, std::string_view file) {
  if (!m.rank_source.empty()) return;
  const size_t slash = file.find_last_of('/');
  const int64_t r =
      RankFromFileName(slash == std::string_view::npos ? file : file.substr(slash + 1));
  if (r >= 0) {
    m.rank = r;
    m.rank_source = "file name";
    return;
  }
  m.rank = 0;
  m.rank_source = "default";
  m.AddDiagnostic(
      base::DiagnosticId::kRankUnknown, 1,
      fmt::format("{}: no rank in distributedInfo or the file name; taken as rank 0", file));
}

void FinishModel(TraceModel& m, std::string_view file, std::vector<MemoryDelta> deltas) {
  std::stable_sort(m.memory_events.begin(), m.memory_events.end(),
                   [](const MemoryEvent& a, const MemoryEvent& b) { return a.ts_ns < b.ts_ns; });
  PeaksFromDeltas(m, file, std::move(deltas));
  ResolveDevices(m, file);
  m.LinkLaunches();
}

}  // namespace trainprof::trace
