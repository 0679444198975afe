// The Phase view section (phase_view.h): time per phase and per annotation, and the data loader:
// its share of the step, or a warning that nothing in the trace marks it.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "analysis/findings.h"
#include "analysis/sections/sections.h"

namespace trainprof::analysis {

using report::Unit;
using report::Value;

namespace {

void PhaseTable(const AnalyzeInput& in, report::Section& s) {
  report::Table& t = s.AddTable("phase_breakdown", "Time per phase",
                                {{"rank", "Rank", Unit::kText},
                                 {"phase", "Phase", Unit::kText},
                                 {"annotations", "Annotations", Unit::kCount},
                                 {"cpu_s", "CPU time", Unit::kSeconds},
                                 {"gpu_s", "GPU annotation time", Unit::kSeconds},
                                 {"device_s", "GPU work launched", Unit::kSeconds}});
  t.charts.push_back({.kind = report::ChartKind::kBars,
                      .title = "CPU time per phase (annotations, summed)",
                      .label = "phase",
                      .values = {"cpu_s"}});
  for (size_t i = 0; i < in.ranks.size(); ++i) {
    struct Sum {
      int64_t n = 0, cpu = 0, gpu = 0, dev = 0;
    };
    std::map<std::string, Sum> by_phase;
    for (const PhaseRow& r : in.analyses[i].phases.rows) {
      Sum& p = by_phase[r.phase];
      p.n++, p.cpu += r.cpu_ns, p.gpu += r.gpu_ns, p.dev += r.device_ns;
    }
    for (const auto& [phase, p] : by_phase)
      t.rows.push_back(
          {in.RankLabel(i), phase, p.n, Seconds(p.cpu), Seconds(p.gpu), Seconds(p.dev)});
  }
}

void AnnotationTable(const AnalyzeInput& in, report::Section& s) {
  report::Table& t = s.AddTable("annotations", "Time per user annotation",
                                {{"rank", "Rank", Unit::kText},
                                 {"name", "Annotation", Unit::kText},
                                 {"phase", "Phase", Unit::kText},
                                 {"calls", "Calls", Unit::kCount},
                                 {"cpu_s", "CPU time", Unit::kSeconds},
                                 {"gpu_calls", "GPU ranges", Unit::kCount},
                                 {"gpu_s", "GPU annotation time", Unit::kSeconds},
                                 {"device_s", "GPU work launched", Unit::kSeconds}});
  for (size_t i = 0; i < in.ranks.size(); ++i)
    for (const PhaseRow& r : in.analyses[i].phases.rows)
      t.rows.push_back({in.RankLabel(i), r.name, r.phase, r.calls, Seconds(r.cpu_ns), r.gpu_calls,
                        Seconds(r.gpu_ns), Seconds(r.device_ns)});
  MarkLong(t);
}

// The data loader's share of the analysed steps (the Overview's DataLoader category), and a
// warning when no rank has a single range that marks it: then 0 % says nothing.
void DataLoader(const AnalyzeInput& in, report::Section& s) {
  int64_t markers = 0;
  double dl_ns = 0, step_ns = 0;
  for (const RankAnalysis& a : in.analyses) {
    markers += a.phases.dataloader_markers;
    const double n = static_cast<double>(a.overview.steps.size());
    dl_ns += a.overview.avg_ns[kDataLoader] * n;
    step_ns += a.overview.avg_total_ns * n;
  }
  s.AddMetric("dataloader_markers", "Data-loader ranges in the trace", markers, Unit::kCount);
  const bool training = std::ranges::any_of(in.analyses, HasTrainingLoop);
  if (markers == 0 && !training) return;  // inference: no data loader to miss
  if (markers == 0) {
    s.findings.push_back(
        {report::Severity::kWarning,
         "No data-loader range in the trace: the DataLoader share cannot be told from 0 %. Keep "
         "the DataLoader in the profiled loop (Kineto marks enumerate(DataLoader)#...), wrap your "
         "loader in record_function, or name its ranges with --dataloader-pattern."});
    return;
  }
  if (step_ns > 0)
    s.AddMetric("dataloader_pct", "Data loader, share of step time", 100 * dl_ns / step_ns,
                Unit::kPercent);
}

}  // namespace

void AddPhaseSection(const AnalyzeInput& in, report::Report& r) {
  report::Section& s = r.AddSection("phase_view", "Phase view");
  DataLoader(in, s);
  PhaseTable(in, s);
  AnnotationTable(in, s);
  if (s.tables[0].rows.empty())
    s.notes.push_back("No user annotations (record_function) besides the ProfilerSteps.");
}

}  // namespace trainprof::analysis
