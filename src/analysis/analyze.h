// `trainprof analyze`: every analysis of every rank, and the Report that shows them.
//
//   std::vector<trace::TraceModel> ranks = ...;           // trace::ReadTraceFiles
//   AnalyzeOptions o;
//   std::vector<RankAnalysis> a = AnalyzeAll(ranks, o);
//   report::Report r = BuildAnalyzeReport(ranks, a, o, "traces/");
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analysis/gpu_metrics.h"
#include "analysis/hta.h"
#include "analysis/overview.h"
#include "analysis/steps.h"
#include "report/report.h"
#include "trace/trace_model.h"

namespace trainprof::analysis {

struct AnalyzeOptions {
  StepsMode steps = StepsMode::kComplete;
  HtaOptions hta;
  int threads = 0;  // ranks analysed in parallel; 0: one per core
  // --critical-path: "" each analysed step, "ANNOTATION[:INSTANCE]"; absent: not computed.
  std::optional<std::string> critical_path;
};

struct RankAnalysis {
  StepsResult steps;
  Overview overview;
  std::vector<GpuSummary> gpus;
  HtaResult hta;
};

// One RankAnalysis per model, in the same order; ranks run in parallel.
std::vector<RankAnalysis> AnalyzeAll(const std::vector<trace::TraceModel>& models,
                                     const AnalyzeOptions& o);

// Thresholds of the recommendations (docs/trace-analysis.md).
inline constexpr double kDataLoaderPct = 5;
inline constexpr double kLowUtilizationPct = 50;
inline constexpr double kCommunicationPct = 10;
inline constexpr double kMemoryNearLimitPct = 90;
inline constexpr double kHostWaitShareOfIdlePct = 50;
inline constexpr double kShortKernelPct = 30;
inline constexpr double kLaunchDelayOutlierPct = 10;

report::Report BuildAnalyzeReport(const std::vector<trace::TraceModel>& models,
                                  const std::vector<RankAnalysis>& analyses,
                                  const AnalyzeOptions& o, const std::string& input);

}  // namespace trainprof::analysis
