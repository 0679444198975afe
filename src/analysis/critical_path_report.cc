#include "analysis/critical_path_report.h"

#include <fmt/format.h>

#include <cctype>
#include <set>

#include "analysis/critical_path.h"
#include "analysis/views.h"
#include "base/text.h"

namespace trainprof::analysis {

using report::Unit;
using report::Value;

namespace {

struct Window {
  std::string label;
  int64_t begin = 0, end = 0;
};

// "forward:1" -> ("forward", 1); "aten::add" keeps its "::"; no instance means 0.
std::pair<std::string, int> ParseSpec(const std::string& spec) {
  size_t colon = spec.rfind(':');
  if (colon == std::string::npos || colon + 1 == spec.size() ||
      (colon > 0 && spec[colon - 1] == ':'))
    return {spec, 0};
  for (size_t i = colon + 1; i < spec.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(spec[i]))) return {spec, 0};
  return {spec.substr(0, colon), std::stoi(spec.substr(colon + 1))};
}

std::vector<Window> Windows(const trace::TraceModel& m, const RankAnalysis& a,
                            const std::string& spec, std::vector<std::string>* notes) {
  std::vector<Window> out;
  if (spec.empty()) {
    for (const Step& s : a.steps.steps) out.push_back({s.name, s.begin_ns, s.end_ns});
    return out;
  }
  auto [annotation, instance] = ParseSpec(spec);
  StatusOr<std::pair<int64_t, int64_t>> w = FindAnnotationWindow(m, annotation, instance);
  if (!w.ok()) {
    notes->push_back(fmt::format("Rank {}: {}", m.rank, w.status().message()));
    return out;
  }
  out.push_back({fmt::format("{}:{}", annotation, instance), w->first, w->second});
  return out;
}

}  // namespace

void AddCriticalPathSection(const std::vector<trace::TraceModel>& models,
                            const std::vector<RankAnalysis>& an, const std::string& spec,
                            report::Report& r) {
  report::Section& s = r.AddSection("critical_path", "Critical path (HTA's algorithm)");
  std::vector<report::Column> cols = {{"rank", "Rank", Unit::kText},
                                      {"window", "Window", Unit::kText},
                                      {"length_s", "Length", Unit::kSeconds},
                                      {"nodes", "Nodes", Unit::kCount}};
  for (int c = 0; c + 1 < kNumCpCategories; ++c) {
    std::string name = CpCategoryName(static_cast<CpCategory>(c));
    cols.push_back({name + "_pct", name, Unit::kPercent});
  }
  report::Table& t = s.AddTable("critical_path", "Critical path per window", cols);
  report::Table& top = s.AddTable("critical_path_top_events", "Top events on the critical path",
                                  {{"rank", "Rank", Unit::kText},
                                   {"window", "Window", Unit::kText},
                                   {"name", "Event", Unit::kText},
                                   {"category", "Category", Unit::kText},
                                   {"time_s", "Time on path", Unit::kSeconds},
                                   {"pct", "Share of path", Unit::kPercent}});
  std::array<int64_t, kNumCpCategories> sums{};
  int64_t length = 0, windows = 0;
  for (size_t i = 0; i < models.size(); ++i)
    for (const Window& w : Windows(models[i], an[i], spec, &s.notes)) {
      StatusOr<CriticalPath> p = ComputeCriticalPath(models[i], w.begin, w.end);
      if (!p.ok()) {
        s.notes.push_back(
            fmt::format("Rank {}, {}: {}", models[i].rank, w.label, p.status().message()));
        continue;
      }
      std::vector<Value> row = {fmt::format("{}", models[i].rank), w.label, Seconds(p->length_ns),
                                p->nodes};
      for (int c = 0; c + 1 < kNumCpCategories; ++c) {
        row.push_back(p->pct(static_cast<CpCategory>(c)));
        sums[c] += p->category_ns[c];
      }
      t.rows.push_back(std::move(row));
      for (const CriticalPath::Event& e : p->top)
        top.rows.push_back({fmt::format("{}", models[i].rank), w.label,
                            base::Ellipsize(models[i].name_of(e.event), 90),
                            std::string(CpCategoryName(e.category)), Seconds(e.ns),
                            p->length_ns > 0 ? 100.0 * e.ns / p->length_ns : 0.0});
      length += p->length_ns;
      ++windows;
    }
  if (t.rows.size() > 40) t.kind = report::TableKind::kDetail;
  if (top.rows.size() > 40) top.kind = report::TableKind::kDetail;
  if (windows == 0) return;
  int64_t total = 0;
  for (int64_t v : sums) total += v;
  for (int c = 0; c + 1 < kNumCpCategories; ++c) {
    std::string name = CpCategoryName(static_cast<CpCategory>(c));
    s.AddMetric(name + "_pct", name + " (share of the critical path)",
                total > 0 ? 100.0 * static_cast<double>(sums[c]) / total : 0.0, Unit::kPercent);
  }
  s.AddMetric("length_s", "Critical path length (mean per window)",
              Seconds(length) / static_cast<double>(windows), Unit::kSeconds);
}

void WriteCriticalPathTrace(const std::vector<trace::TraceModel>& models,
                            const std::vector<RankAnalysis>& an, const std::string& spec,
                            trace::ChromeTraceWriter& w) {
  std::vector<std::string> notes;
  int64_t pid = 0;
  for (size_t i = 0; i < models.size(); ++i) {
    const trace::TraceModel& m = models[i];
    for (const Window& win : Windows(m, an[i], spec, &notes)) {
      StatusOr<CriticalPath> p = ComputeCriticalPath(m, win.begin, win.end);
      if (!p.ok()) continue;
      ++pid;
      w.ProcessName(pid, fmt::format("rank {} critical path: {}", m.rank, win.label));
      w.ThreadName(pid, 1, "path edges");
      w.ThreadName(pid, 2, "CPU events on the path");
      for (const CriticalPath::Step& st : p->steps) {
        if (st.to_ns <= st.from_ns) continue;
        std::string name = st.event >= 0 ? m.name_of(static_cast<size_t>(st.event))
                                         : std::string(CpEdgeName(st.type));
        w.Complete(w.InternName(name), CpCategoryName(st.category), st.from_ns,
                   st.to_ns - st.from_ns, pid, 1, -1,
                   fmt::format("\"edge\": \"{}\"", CpEdgeName(st.type)));
      }
      std::set<int64_t> named;
      for (uint32_t e : p->events) {
        const bool gpu = m.stream_of(e) >= 0;
        const int64_t tid = gpu ? 1000 + m.stream_of(e) : 2;
        if (gpu && named.insert(tid).second)
          w.ThreadName(pid, tid, fmt::format("GPU stream {} on the path", m.stream_of(e)));
        w.Complete(w.InternName(m.name_of(e)), trace::EventKindName(m.kind[e]), m.ts_ns[e],
                   m.dur_ns[e], pid, tid, -1, "\"critical\": 1");
      }
    }
  }
}

void AddCriticalPathView(const AnalyzeInput& in, report::Report& r) {
  if (in.options.critical_path)
    AddCriticalPathSection(in.models, in.analyses, *in.options.critical_path, r);
}

}  // namespace trainprof::analysis
