#include "analysis/ranks/critical_path_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "analysis/ranks/critical_path.h"
#include "analysis/units.h"

namespace trainprof::analysis {

using report::Unit;
using report::Value;

namespace {

struct Window {
  std::string label;
  int64_t begin = 0, end = 0;
};

struct Spec {
  std::string annotation;
  int first = 0, last = 0;
};

// "forward:1" -> ("forward", 1, 1); "forward:1-3" -> instances 1 to 3; "aten::add" keeps its
// "::"; no instance means 0.
Spec ParseSpec(const std::string& spec) {
  size_t colon = spec.rfind(':');
  if (colon == std::string::npos || colon + 1 == spec.size() ||
      (colon > 0 && spec[colon - 1] == ':'))
    return {spec, 0, 0};
  const std::string tail = spec.substr(colon + 1);
  const size_t dash = tail.find('-');
  auto number = [](const std::string& t) {
    return !t.empty() && std::ranges::all_of(t, [](unsigned char c) { return std::isdigit(c); });
  };
  const std::string a = tail.substr(0, dash),
                    b = dash == std::string::npos ? a : tail.substr(dash + 1);
  if (!number(a) || !number(b)) return {spec, 0, 0};
  return {spec.substr(0, colon), std::stoi(a), std::stoi(b)};
}

std::vector<Window> Windows(const trace::TraceModel& m, const RankAnalysis& a,
                            const std::string& spec, std::vector<std::string>* notes) {
  std::vector<Window> out;
  if (spec.empty()) {
    for (const Step& s : a.steps.steps) out.push_back({s.name, s.begin_ns, s.end_ns});
    return out;
  }
  auto [annotation, instance, last] = ParseSpec(spec);
  StatusOr<std::pair<int64_t, int64_t>> w = FindAnnotationWindow(m, annotation, instance, last);
  if (!w.ok()) {
    notes->push_back(fmt::format("Rank {}: {}", m.rank, w.status().message()));
    return out;
  }
  std::string label = annotation.empty() ? "whole trace"
                      : last == instance ? fmt::format("{}:{}", annotation, instance)
                                         : fmt::format("{}:{}-{}", annotation, instance, last);
  out.push_back({std::move(label), w->first, w->second});
  return out;
}

// The path's edges and events into `cw`: the events with a node on the path, and those the
// edges' time is attributed to (an enclosing operator may have no node on the path).
void AddPathEvents(const trace::TraceModel& m, const CriticalPath& p, CpWindow& cw) {
  std::vector<uint32_t> ids = p.events;
  for (const CriticalPath::Step& st : p.steps)
    if (st.event >= 0) ids.push_back(static_cast<uint32_t>(st.event));
  for (const CriticalPath::Step& st : p.others) {
    ids.push_back(st.from_event);
    ids.push_back(st.to_event);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  auto index = [&](int64_t e) {
    return static_cast<uint32_t>(std::lower_bound(ids.begin(), ids.end(), e) - ids.begin());
  };
  auto add = [&](const CriticalPath::Step& st, bool critical) {
    std::string name =
        st.event >= 0 ? m.name_of(static_cast<size_t>(st.event)) : std::string(CpEdgeName(st.type));
    const int64_t attributed = st.event >= 0 && std::binary_search(ids.begin(), ids.end(), st.event)
                                   ? index(st.event)
                                   : int64_t{-1};
    cw.edges.push_back({st.from_ns, st.to_ns, st.type, st.category, std::move(name), st.weight_ns,
                        st.from_node, st.to_node, index(st.from_event), index(st.to_event),
                        st.from_start, st.to_start, attributed, critical});
  };
  for (const CriticalPath::Step& st : p.steps) add(st, true);
  for (const CriticalPath::Step& st : p.others) add(st, false);
  for (uint32_t e : ids)
    cw.events.push_back({m.name_of(e), trace::EventKindName(m.kind[e]), m.ts_ns[e], m.dur_ns[e],
                         m.stream_of(e), std::binary_search(p.events.begin(), p.events.end(), e)});
}

}  // namespace

std::vector<CpWindow> RankCriticalPaths(const trace::TraceModel& m, const RankAnalysis& a,
                                        const std::string& spec, const CpOptions& o) {
  std::vector<CpWindow> out;
  std::vector<std::string> notes;
  std::vector<Window> windows = Windows(m, a, spec, &notes);
  for (std::string& n : notes) out.push_back({.note = std::move(n)});
  for (const Window& w : windows) {
    CpWindow cw;
    cw.label = w.label;
    StatusOr<CriticalPath> p = ComputeCriticalPath(m, w.begin, w.end, o);
    if (!p.ok()) {
      cw.note = fmt::format("Rank {}, {}: {}", m.rank, w.label, p.status().message());
      out.push_back(std::move(cw));
      continue;
    }
    cw.length_ns = p->length_ns;
    cw.nodes = p->nodes;
    cw.category_ns = p->category_ns;
    for (const CriticalPath::Event& e : p->top)
      cw.top.push_back({m.name_of(e.event), e.category, e.ns});
    AddPathEvents(m, *p, cw);
    out.push_back(std::move(cw));
  }
  return out;
}

void WriteCriticalPathTrace(const std::vector<RankInfo>& ranks, const std::vector<RankAnalysis>& an,
                            const std::vector<int64_t>& offsets_ns, trace::ChromeTraceWriter& w) {
  int64_t pid = 0;
  for (size_t i = 0; i < ranks.size(); ++i) {
    const int64_t shift = i < offsets_ns.size() ? offsets_ns[i] : 0;
    for (const CpWindow& win : an[i].critical_paths) {
      if (!win.note.empty()) continue;
      ++pid;
      w.ProcessName(pid, fmt::format("rank {} critical path: {}", ranks[i].rank, win.label));
      w.ThreadName(pid, 1, "path edges");
      w.ThreadName(pid, 2, "CPU events on the path");
      for (const CpWindow::Edge& st : win.edges) {
        if (!st.critical || st.to_ns <= st.from_ns) continue;
        w.Complete(w.InternName(st.name), CpCategoryName(st.category), st.from_ns - shift,
                   st.to_ns - st.from_ns, pid, 1, -1,
                   fmt::format("\"edge\": \"{}\"", CpEdgeName(st.type)));
      }
      std::set<int64_t> named;
      for (const CpWindow::Event& e : win.events) {
        if (!e.node) continue;
        const bool gpu = e.stream >= 0;
        const int64_t tid = gpu ? 1000 + e.stream : 2;
        if (gpu && named.insert(tid).second)
          w.ThreadName(pid, tid, fmt::format("GPU stream {} on the path", e.stream));
        w.Complete(w.InternName(e.name), e.kind, e.ts_ns - shift, e.dur_ns, pid, tid, -1,
                   "\"critical\": 1");
      }
    }
  }
}

}  // namespace trainprof::analysis
