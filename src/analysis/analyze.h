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

#include "analysis/categories.h"
#include "analysis/flops.h"
#include "analysis/gpu_metrics.h"
#include "analysis/hta.h"
#include "analysis/kernel_sequences.h"
#include "analysis/memcpy_bandwidth.h"
#include "analysis/memory_view.h"
#include "analysis/module_view.h"
#include "analysis/operator_view.h"
#include "analysis/overview.h"
#include "analysis/phase_view.h"
#include "analysis/rank_parts.h"
#include "analysis/steps.h"
#include "report/report.h"
#include "trace/trace_model.h"

namespace trainprof::analysis {

struct AnalyzeOptions {
  StepsMode steps = StepsMode::kComplete;
  HtaOptions hta;
  int threads = 0;  // ranks analysed in parallel; 0: one per core
  // One rank with a core to spare: its timeline views and its operator-tree views on two
  // threads (the same results), unless the rank has over a million events (analyze.cc).
  bool split_lone_rank = false;
  // Names containing one of these mark the data loader too (--dataloader-pattern).
  std::vector<std::string> dataloader_patterns;
  // --critical-path: "" each analysed step, "ANNOTATION[:INSTANCE]"; absent: not computed.
  std::optional<std::string> critical_path;
  FlopsOptions flops;  // --peak-tflops
};

struct RankAnalysis {
  StepsResult steps;
  Overview overview;
  std::vector<GpuSummary> gpus;
  HtaResult hta;
  std::vector<OperatorRow> operators;                // the Operator view (operator_view.h)
  std::vector<OperatorRow> operators_by_shape;       // ... grouped by input shape
  std::vector<OperatorRow> operators_by_stack;       // ... grouped by call stack
  std::vector<KernelRow> kernels, operator_kernels;  // the Kernel view
  PhaseResult phases;
  std::vector<ModuleRow> modules;                // the Module view
  std::vector<KernelSequence> kernel_sequences;  // HTA's frequent kernel sequences
  MemoryResult memory;                           // the Memory view
  FlopsResult flops;                             // MFU and roofline
  CategoryResult categories;                     // GPU time per operator category
  std::vector<MemcpyBandwidth> memcpy;           // bandwidth per memcpy direction
  // For the multi-rank report (rank_parts.h).
  std::vector<RankCommOp> comm_ops;            // communication kernels, in order of issue
  std::vector<CommBreakdown> comm_breakdowns;  // one per step of `steps`
  std::vector<Candidate> candidates;           // this rank's recommendation candidates
  std::vector<CpWindow> critical_paths;        // with --critical-path
};

// Whether `ranks` analysed with `threads` (0: one per core) leave a lone rank a second core.
bool LoneRankHasSpareCore(size_t ranks, int threads);

// Every analysis of one rank, with `hta` as given (AnalyzeAll sets compat_drop_last_step).
RankAnalysis AnalyzeRank(const trace::TraceModel& m, const AnalyzeOptions& o,
                         const HtaOptions& hta);

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

// The report from the ranks' infos and analyses (same order): all it needs once the models are
// gone, so `trainprof merge` builds it from summaries (rank_summary.h).
report::Report BuildAnalyzeReport(const std::vector<RankInfo>& ranks,
                                  const std::vector<RankAnalysis>& analyses,
                                  const AnalyzeOptions& o, const std::string& input);
report::Report BuildAnalyzeReport(const std::vector<trace::TraceModel>& models,
                                  const std::vector<RankAnalysis>& analyses,
                                  const AnalyzeOptions& o, const std::string& input);

}  // namespace trainprof::analysis
