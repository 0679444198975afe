#include "analysis/analyze.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <set>
#include <span>
#include <thread>

#include "analysis/findings.h"
#include "analysis/ranks/collectives.h"
#include "analysis/ranks/critical_path_report.h"
#include "analysis/ranks/cross_rank_path.h"
#include "analysis/ranks/distributed.h"
#include "base/parallel.h"
#include "base/text.h"
#include "report/packed_rows.h"

namespace trainprof::analysis {

namespace {

// The views of the operator tree (the TensorBoard plugin's), and the FLOPs of its operators.
void OperatorViews(const trace::TraceModel& m, const AnalyzeOptions& o, RankAnalysis& a) {
  const OpTree tree = BuildOpTree(m);
  a.lists->operators = OperatorView(m, tree);
  a.lists->operators_by_shape = OperatorViewByShape(m, tree);
  a.lists->operators_by_stack = OperatorViewByStack(m, tree);
  a.lists->kernels = KernelView(m, tree, false);
  a.lists->operator_kernels = KernelView(m, tree, true);
  a.phases = ComputePhases(m, tree, o.dataloader_patterns, o.steps_from);
  a.lists->modules = ModuleView(m, tree);
  a.tables->kernel_sequences = FrequentKernelSequences(m, tree, {});
  FlopsResult flops = ComputeFlops(m, tree, a.steps, o.flops);
  a.lists->flops_operators = std::move(flops.operators);
  a.lists->flops_shapes = std::move(flops.shapes);
  a.tables->flops = std::move(flops);
  a.tables->categories = ComputeCategories(m, tree);
  a.gpu_ns = tree.gpu_ns;
}

// Above this many events a rank's view groups run one after another even with a core to spare:
// two at once hold both groups' working memory. On a 1 GB trace (2.4 million events) that was
// 25-40 MB more at the peak for 10 % less time, and its memory target (150 MB) wins.
constexpr size_t kSplitMaxEvents = size_t{1} << 20;

// The rank's views in groups that share nothing but the model and the steps, the longest
// first (on the V100 trace about 9, 7.5, 4.4, 4 and 1.6 ms). With a core to spare two threads
// take the next group as each finishes: which half weighs more differs by trace.
void RankViews(const trace::TraceModel& m, const AnalyzeOptions& o, const HtaOptions& hta,
               RankAnalysis& a) {
  const std::function<void()> groups[] = {
      [&] { OperatorViews(m, o, a); },
      [&] { a.tables->hta = ComputeHta(m, a.steps, hta); },
      [&] { a.tables->gpus = ComputeGpuSummaries(m, a.steps); },
      [&] { a.overview = ComputeOverview(m, a.steps, o.dataloader_patterns, o.steps_from); },
      [&] {
        a.tables->idle = ComputeIdleCauses(m, a.steps, o.dataloader_patterns, o.steps_from);
        a.memory = MemoryView(m);
        a.tables->memcpy = MemcpyBandwidthByDirection(m);
        a.comm_ops = RankCommOps(m, a.comm_names);
        a.comm_breakdowns = ComputeCommBreakdowns(m, a.steps);
        MarkPath(m, o, a);
      },
  };
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t g = next++; g < std::size(groups); g = next++) groups[g]();
  };
  if (!o.split_lone_rank || m.size() > kSplitMaxEvents) return work();
  std::thread second(work);
  work();
  second.join();
}

}  // namespace

CollectivesResult MatchCollectives(const std::vector<RankInfo>& ranks,
                                   const std::vector<RankAnalysis>& analyses) {
  CommOpsOf of;
  of.reserve(analyses.size());
  for (const RankAnalysis& a : analyses) of.push_back({&a.comm_ops, &a.comm_names});
  return MatchCollectives(ranks, of);
}

bool LoneRankHasSpareCore(size_t ranks, int threads) {
  const int cores = threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency());
  return ranks == 1 && cores >= 2;
}

RankAnalysis AnalyzeRank(const trace::TraceModel& m, const AnalyzeOptions& o,
                         const HtaOptions& hta) {
  RankAnalysis a;
  a.steps = FindSteps(m, o.steps, o.steps_from);
  RankViews(m, o, hta, a);
  if (a.steps.gpu_data_cut) {  // the cut took the GPU events: no GPU figure is true
    a.tables->gpus.clear();
    a.tables->hta = HtaResult{};
    a.tables->hta.rank = m.rank;
    a.tables->idle = IdleCauses{};
  }
  a.lists->candidates = RankCandidates(m, a, o);
  if (o.critical_path)
    a.critical_paths = RankCriticalPaths(
        m, a, *o.critical_path,
        {.data_load = o.critical_path_data_load, .all_edges = o.critical_path_all_edges});
  return a;
}

std::vector<RankAnalysis> AnalyzeAll(const std::vector<trace::TraceModel>& models,
                                     const AnalyzeOptions& o) {
  std::vector<RankAnalysis> out(models.size());
  HtaOptions hta = o.hta;
  if (hta.hta_compat) {
    // HTA drops the last step only when the traces name at least two distinct steps.
    std::set<std::string> names;
    for (const auto& m : models)
      for (size_t i = 0; i < m.size() && names.size() < 2; ++i)
        if (ProfilerStepNumber(m.name_of(i)) >= 0) names.insert(m.name_of(i));
    hta.compat_drop_last_step = names.size() >= 2 && !hta.keep_last_step;
  }
  AnalyzeOptions each = o;
  each.split_lone_rank = LoneRankHasSpareCore(models.size(), o.threads);
  base::ParallelFor(models.size(), o.threads,
                    [&](size_t i) { out[i] = AnalyzeRank(models[i], each, hta); });
  return out;
}

}  // namespace trainprof::analysis
