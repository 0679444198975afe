// Files of one process read as one rank (process_merge.h).
#include "trace/process_merge.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <utility>

namespace trainprof::trace {
namespace {

// The process of the host side: the pid of the first operator or annotation, else of any event
// (a name such as the legacy export's "CPU functions" as itself, not its per-file id).
std::string HostPid(const TraceModel& m) {
  size_t i = 0;
  while (i < m.size() && m.kind[i] != EventKind::kCpuOp && m.kind[i] != EventKind::kUserAnnotation)
    ++i;
  if (i == m.size()) i = 0;
  if (m.size() == 0) return "";
  const int64_t pid = m.pid_of(i);
  if (pid >= TraceModel::kStringIdBase)
    return m.names[static_cast<uint32_t>(pid - TraceModel::kStringIdBase)];
  return std::to_string(pid);
}

// tensorboard_trace_handler's file name "<worker>.<stamp>.pt.trace.json(.gz)": the worker
// ("<host>_<pid>") and the export stamp (ms since the epoch); {"", -1} for any other name (the
// pid alone then tells the process).
struct ExportName {
  std::string worker;
  int64_t stamp = -1;
};

ExportName ExportNameOf(const std::string& path) {
  const std::string file = path.substr(path.find_last_of('/') + 1);
  const size_t dot = file.find('.'), end = file.find(".pt.trace.json");
  if (dot == std::string::npos || end == std::string::npos || end <= dot + 1) return {};
  int64_t v = 0;
  for (char c : file.substr(dot + 1, end - dot - 1)) {
    if (c < '0' || c > '9' || v > (int64_t{1} << 58)) return {};
    v = v * 10 + (c - '0');
  }
  return {file.substr(0, dot), v};
}

// Moves every time of `m` by `d`.
void Shift(TraceModel& m, int64_t d) {
  m.ts_ns.Shift(d);
  for (MemoryEvent& e : m.memory_events) e.ts_ns += d;
}

std::pair<int64_t, int64_t> Span(const TraceModel& m) {
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
  for (size_t i = 0; i < m.size(); ++i)
    lo = std::min(lo, m.ts_ns[i]), hi = std::max(hi, m.end_ns(i));
  return {lo, hi};
}

int64_t MaxId(const Int64Column& c, size_t n) {
  int64_t v = 0;
  for (size_t i = 0; i < n; ++i) v = std::max(v, c[i]);
  return v;
}

// Moves every id of `c` (but kNone) up by `by`.
void ShiftIds(Int64Column& c, size_t n, int64_t by) {
  for (size_t i = 0; i < n; ++i)
    if (c[i] != kNone) c.Set(i, c[i] + by);
}

}  // namespace

void AppendModel(TraceModel& into, TraceModel&& later) {
  const size_t n = later.size();
  ShiftIds(later.correlation, n, MaxId(into.correlation, into.size()) + 1);
  ShiftIds(later.external_id, n, MaxId(into.external_id, into.size()) + 1);
  std::vector<uint32_t> names(later.names.size());
  for (uint32_t id = 0; id < names.size(); ++id) names[id] = into.names.Intern(later.names[id]);
  std::vector<uint32_t> tracks(later.tracks.size());
  for (size_t t = 0; t < tracks.size(); ++t)
    tracks[t] = into.FindOrAddTrack(TraceModel::MapTrackNames(later.tracks[t], names));
  for (const DeviceInfo& d : later.devices)
    if (into.FindDevice(d.id) == nullptr) into.devices.push_back(d);
  for (base::Diagnostic& d : later.diagnostics) into.diagnostics.push_back(std::move(d));
  later.diagnostics.clear();
  into.Absorb(std::move(later), names, tracks);
  into.LinkLaunches();
}

std::vector<TraceModel> MergeFilesOfOneProcess(std::vector<TraceModel> models) {
  using Key =
      std::tuple<std::string, int64_t, std::string, std::string>;  // host, rank, worker, pid
  std::vector<Key> keys;
  std::vector<int64_t> stamps;  // export stamps, -1 when the name has none
  std::vector<std::pair<int64_t, int64_t>> spans;
  for (const TraceModel& m : models) {
    const ExportName e = ExportNameOf(m.path);
    keys.emplace_back(m.host_name, m.rank, e.worker, HostPid(m));
    stamps.push_back(e.stamp);
    spans.push_back(Span(m));
  }
  std::vector<size_t> order(models.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::ranges::stable_sort(order, [&](size_t a, size_t b) {
    return std::tie(keys[a], stamps[a], spans[a].first) <
           std::tie(keys[b], stamps[b], spans[b].first);
  });
  std::vector<bool> gone(models.size(), false);
  std::vector<int64_t> files(models.size(), 1);
  std::vector<bool> relative(models.size(), false);
  for (size_t k = 0, head = 0; k < order.size(); ++k) {
    const size_t i = order[k];
    const size_t h = order[head];
    if (k == head || keys[i] != keys[h]) {
      head = k;  // another process
      continue;
    }
    if (spans[i].first < spans[h].second) {
      // The legacy profiler's times start at 0 in each file: a named worker's cycles follow
      // one another (the gap between them is unknown); anything else is a file of its own.
      if (std::get<2>(keys[i]).empty()) {
        head = k;
        continue;
      }
      const int64_t by = spans[h].second - spans[i].first;
      Shift(models[i], by);
      spans[i].first += by, spans[i].second += by;
      relative[h] = true;
    }
    spans[h].second = std::max(spans[h].second, spans[i].second);
    AppendModel(models[h], std::move(models[i]));
    gone[i] = true;
    ++files[h];
  }
  std::vector<TraceModel> out;
  for (size_t i = 0; i < models.size(); ++i) {
    if (gone[i]) continue;
    if (files[i] > 1) {
      // One rank now: "each file is analysed as its own span" no longer holds.
      std::erase_if(models[i].diagnostics, [](const base::Diagnostic& d) {
        return d.id == base::DiagnosticId::kDuplicateRank;
      });
      const Key& k = keys[i];
      models[i].AddDiagnostic(
          base::DiagnosticId::kFilesOfOneProcess, files[i],
          fmt::format("{}: {} files of process {} (rank {}), one per profiling cycle, read as one "
                      "rank{}",
                      models[i].path, files[i],
                      std::get<2>(k).empty() ? std::get<3>(k) : std::get<2>(k), models[i].rank,
                      relative[i] ? "; their clocks start at 0 in each file (the legacy "
                                    "profiler), so the cycles are placed one after another"
                                  : ""));
    }
    out.push_back(std::move(models[i]));
  }
  return out;
}

}  // namespace trainprof::trace
