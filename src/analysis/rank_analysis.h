// What one rank's analysis is (RankAnalysis) and what it is asked for (AnalyzeOptions): data
// only, so that the views, the recommendations, the distributed view, diff and the rank
// summaries read it without reaching back up to analyze.h, which runs the analyses.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analysis/categories.h"
#include "analysis/flops.h"
#include "analysis/gpu_metrics.h"
#include "analysis/hta/hta.h"
#include "analysis/idle_causes.h"
#include "analysis/kernel_sequences.h"
#include "analysis/memcpy_bandwidth.h"
#include "analysis/memory_view.h"
#include "analysis/module_view.h"
#include "analysis/operator_view.h"
#include "analysis/overview.h"
#include "analysis/phase_view.h"
#include "analysis/rank_parts.h"
#include "analysis/steps.h"
#include "base/box.h"

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
  // Host ranges named one of these (or one and a number) are steps too (--steps-from).
  std::vector<std::string> steps_from;
  // --critical-path: "" each analysed step, "ANNOTATION[:INSTANCE[-LAST]]"; absent: not computed.
  std::optional<std::string> critical_path;
  std::vector<std::string> critical_path_data_load;  // --data-load-events: HTA's, regexes
  bool critical_path_all_edges = false;  // keep the graph's every edge (HTA's show_all_edges)
  FlopsOptions flops;                    // --peak-tflops
};

class DetailStore;

// The lists of a rank's detail that a pass across ranks reads on its own (the modules across
// ranks, the top operators, kernels and shapes of all ranks, the recommendations, and the
// rank's tables: RankTables), first in its record in this order.
enum class AcrossList { kModules, kOperators, kKernels, kShapes, kCandidates, kTables };
inline constexpr size_t kAcrossLists = 6;

// The figures of a rank that its own rows of the per-rank tables read, and a few notes and
// metrics across ranks: with the detail in a scratch file while many ranks wait for their
// report (ranks/detail_store.h), read back with TablesOf. A third of a rank's resident memory
// (its fixed fields and a dozen small lists) before they moved out.
struct RankTables {
  std::vector<GpuSummary> gpus;
  HtaResult hta;
  IdleCauses idle;                               // what the host was doing while the GPU idled
  std::vector<KernelSequence> kernel_sequences;  // HTA's frequent kernel sequences
  CategoryResult categories;                     // GPU time per operator category
  std::vector<MemcpyBandwidth> memcpy;           // bandwidth per memcpy direction
  // MFU and roofline: the figures (its lists are RankAnalysis::flops_operators and
  // flops_shapes, empty here).
  FlopsResult flops;
};

// Where a rank's detail (ranks/detail_store.h) waits while it is out of its analysis, and how
// long the lists that went held.
struct SpilledDetail {
  std::shared_ptr<DetailStore> store;  // null: the detail is in the analysis
  int64_t at = 0, bytes = 0;           // its record in the store's scratch file
  int64_t shape_rows = 0, stack_rows = 0, module_rows = 0, flops_rows = 0;
  int64_t module_root_ns = 0;  // the device time of the modules at depth 0
  // Where each list that passes across ranks read alone ends in the record, which they open in
  // AcrossList's order (ListOf, ranks/detail_store.h).
  std::array<int64_t, kAcrossLists> list_ends{};
};

// The views' lists of rows of a rank, which wait in a scratch file with the rest of its detail
// while many ranks wait for their report: held in one box, so that a rank waiting keeps a
// pointer for them, not nine lists' headers (216 bytes, 22 MB at 100,000 ranks).
struct RankLists {
  std::vector<OperatorRow> operators;                // the Operator view (operator_view.h)
  std::vector<OperatorRow> operators_by_shape;       // ... grouped by input shape
  std::vector<OperatorRow> operators_by_stack;       // ... grouped by call stack
  std::vector<KernelRow> kernels, operator_kernels;  // the Kernel view
  std::vector<ModuleRow> modules;                    // the Module view
  std::vector<FlopsRow> flops_operators;             // FLOPs per operator (FlopsResult::operators)
  std::vector<ShapeRow> flops_shapes;                // the roofline per shape (FlopsResult::shapes)
  std::vector<Candidate> candidates;                 // this rank's recommendation candidates
};

struct RankAnalysis {
  StepsResult steps;
  Overview overview;
  // Present but while the rank's detail waits in a scratch file (then empty: read them with
  // TablesOf, OperatorsOf..., or under a DetailHold, ranks/detail_store.h).
  base::Box<RankTables> tables;
  base::Box<RankLists> lists;
  PhaseResult phases;
  MemoryResult memory;  // the Memory view
  int64_t gpu_ns = 0;   // every GPU event's time in the trace: what the views' coverage is of
  // For the multi-rank report (rank_parts.h).
  std::vector<RankCommOp> comm_ops;            // communication kernels, in order of issue
  CommNames comm_names{""};                    // their process groups, types and comms ids
  std::vector<CommBreakdown> comm_breakdowns;  // one per step of `steps`
  std::vector<StepMarks> step_marks;           // one per step of `steps` (cross_rank_path.h)
  std::vector<CpWindow> critical_paths;        // with --critical-path
  // Many ranks: the detail only per-rank CSV rows read, held in a scratch file until they are
  // written (ranks/detail_store.h). Not in the summary file.
  SpilledDetail spilled;
};

// Thresholds of the recommendations (docs/trace-analysis.md).
inline constexpr double kDataLoaderPct = 5;
inline constexpr double kLowUtilizationPct = 50;
inline constexpr double kCommunicationPct = 10;
inline constexpr double kMemoryNearLimitPct = 90;
inline constexpr double kHostWaitShareOfIdlePct = 50;
inline constexpr double kShortKernelPct = 30;
inline constexpr double kLaunchDelayOutlierPct = 10;
inline constexpr double kSimtGemmPct = 10;
inline constexpr double kCopyPct = 30;  // copies with no kernel beside them, of the step  // fp32
                                        // GEMMs on the CUDA cores, of kernel time

}  // namespace trainprof::analysis
