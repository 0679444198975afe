// `trainprof diff A B`: what changed between two runs (HTA's trace diff): average step time and
// each overview category, and the CPU operators and GPU kernels whose time per step was added,
// removed, increased or decreased most. Times are per analysed step, so runs with different
// step counts compare fairly; several ranks are averaged.
#pragma once

#include <string>
#include <vector>

#include "analysis/analyze.h"
#include "report/report.h"
#include "trace/trace_model.h"

namespace trainprof::analysis {

struct DiffSide {
  std::string label;  // the path as given
  const std::vector<trace::TraceModel>* models = nullptr;
  const std::vector<RankAnalysis>* analyses = nullptr;
};

report::Report BuildDiffReport(const DiffSide& a, const DiffSide& b, int top_n);

}  // namespace trainprof::analysis
