// The Overview section: the step time breakdown per step and on average (overview.h).
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "analysis/sections/sections.h"

namespace trainprof::analysis {

using report::Unit;
using report::Value;

namespace {

// What the ranks' steps are worth saying: each kind of note for the ranks it is true of.
void AddStepNotes(const AnalyzeInput& in, report::Section& ov) {
  auto steps = [&](size_t i) -> const StepsResult& { return in.analyses[i].steps; };
  AddRankNotes(
      ov.notes, in,
      [&](size_t i) {
        if (steps(i).dropped.empty()) return std::string();
        return fmt::format(
            "Rank {}: dropped {} as incomplete: its GPU work was not captured (the TensorBoard "
            "plugin's rule; --steps all keeps it).",
            kRankMark, fmt::join(steps(i).dropped, ", "));
      },
      "step_breakdown.csv");
  AddRankNotes(ov.notes, in, [&](size_t i) {
    if (!steps(i).gpu_data_cut) return std::string();
    return fmt::format(
        "Rank {}: the trace file is cut short and part of its GPU events is lost: step times are "
        "the host's, and the GPU categories show only what the cut left.",
        kRankMark);
  });
  AddRankNotes(ov.notes, in, [&](size_t i) {
    const StepsResult& s = steps(i);
    if (!s.synthetic) return std::string();
    return s.gpu_window ? fmt::format(
                              "Rank {}: no ProfilerStep ranges (an inference, on-demand "
                              "or GPU-only trace); the window analysed is the GPU's busy "
                              "span, from its first GPU event to its last (\"all\").",
                              kRankMark)
                        : fmt::format(
                              "Rank {}: no ProfilerStep ranges; the whole trace is one "
                              "step (\"all\").",
                              kRankMark);
  });
}

}  // namespace

void AddOverviewSection(const AnalyzeInput& in, report::Report& r) {
  report::Section& ov = r.AddSection("overview", "Overview (step time breakdown)");
  std::vector<report::Column> cols = {{"rank", "Rank", Unit::kText},
                                      {"step", "Step", Unit::kText},
                                      {"step_time_s", "Step time", Unit::kSeconds}};
  for (int c = 0; c < kNumCategories; ++c)
    cols.push_back({std::string(CategoryKey(c)) + "_s", CategoryTitle(c), Unit::kSeconds});
  report::Table& steps = AddRankTable(
      ov, in, "step_breakdown", "Step time breakdown per step", cols, report::TableKind::kTable,
      [](const RankAnalysis& a, const std::string& rank, std::vector<std::vector<Value>>& rows) {
        for (const StepBreakdown& b : a.overview.steps) {
          std::vector<Value> row = {rank, b.step, Seconds(b.total_ns)};
          for (int c = 0; c < kNumCategories; ++c) row.push_back(Seconds(b.ns[c]));
          rows.push_back(std::move(row));
        }
      },
      RankDetail::kNotRead);
  std::vector<report::Column> pcols = {{"rank", "Rank", Unit::kText},
                                       {"steps", "Steps", Unit::kCount},
                                       {"step_time_s", "Avg step", Unit::kSeconds}};
  for (int c = 0; c < kNumCategories; ++c)
    pcols.push_back({std::string(CategoryKey(c)) + "_pct", CategoryTitle(c), Unit::kPercent});
  AddRankSummaryTable(
      ov, in, "step_breakdown_average", "Average step, share of step time", pcols,
      [](const RankAnalysis& a, const std::string& rank, std::vector<std::vector<Value>>& rows) {
        const Overview& o = a.overview;
        std::vector<Value> row = {rank, static_cast<int64_t>(o.steps.size()),
                                  Seconds(o.avg_total_ns)};
        for (int c = 0; c < kNumCategories; ++c)
          row.push_back(o.avg_total_ns > 0 ? 100 * o.avg_ns[c] / o.avg_total_ns : 0.0);
        rows.push_back(std::move(row));
      });
  double all_total = 0;
  int64_t all_steps = 0;
  size_t ranks_with_steps = 0;
  for (const RankAnalysis& a : in.analyses) {
    ranks_with_steps += a.overview.steps.empty() ? 0 : 1;
    all_total += a.overview.avg_total_ns * static_cast<double>(a.overview.steps.size());
    all_steps += static_cast<int64_t>(a.overview.steps.size());
  }
  AddStepNotes(in, ov);
  if (steps.rows.size() > 40) steps.kind = report::TableKind::kDetail;
  if (!steps.rows.empty()) {  // a stacked bar per step; "#12" for "ProfilerStep#12"
    report::ChartHint h{.kind = report::ChartKind::kBars,
                        .label = "step",
                        .limit = 0,
                        .horizontal = false,
                        .label_format = ranks_with_steps > 1 ? "r{rank} {step}" : "",
                        .label_trim = "ProfilerStep"};
    for (int c = 0; c < kNumCategories; ++c) h.values.push_back(std::string(CategoryKey(c)) + "_s");
    steps.charts.push_back(std::move(h));
  }
  ov.AddMetric("steps", "Steps analysed", all_steps, Unit::kCount);
  if (all_steps > 0)
    ov.AddMetric("avg_step_time_s", "Average step time", all_total / all_steps / 1e9,
                 Unit::kSeconds);
}

}  // namespace trainprof::analysis
