// The multi-rank part of `trainprof analyze`: the "distributed" section (the TensorBoard
// plugin's distributed view: per rank and step computation, overlap, communication and other
// time; a communication-op table per rank; the collectives matched across ranks with wait,
// transfer, algbw and busbw; the clock offsets between ranks) and the straggler finding, which
// names the rank the others wait for at collectives. docs/trace-analysis.md defines each figure.
//
//   CollectivesResult c = MatchCollectives(models);
//   AddDistributedView(in, report);  // sections.h: when two ranks or more ran collectives
//   std::vector<Candidate> s = StragglerCandidates(models, analyses, c, path);
#pragma once

#include <vector>

#include "analysis/collectives.h"
#include "analysis/cross_rank_path.h"
#include "analysis/rank_analysis.h"
#include "analysis/rank_parts.h"
#include "report/report.h"

namespace trainprof::analysis {

// A rank is named a straggler when the time the other ranks wait for it, per step, is at least
// this share of the median step time.
inline constexpr double kStragglerWaitPct = 5;

// One per step of `s`, in its order.
std::vector<CommBreakdown> ComputeCommBreakdowns(const trace::TraceModel& m, const StepsResult& s);

// Whether the clock residual exceeds the median transfer: then the kernels matched are probably
// not the same collectives, so neither the waits nor the offsets are to be used.
bool MatchDoubtful(const CollectivesResult& c);

// The straggler: the rank(s) the others wait for, by how much, at which collectives, and the
// share of `path` (ComputeCrossRankPath of the same ranks) on it; at most one candidate, empty
// when no rank crosses kStragglerWaitPct.
std::vector<Candidate> StragglerCandidates(const std::vector<RankInfo>& models,
                                           const std::vector<RankAnalysis>& an,
                                           const CollectivesResult& c, const CrossRankPath& path);

// With a straggler (rank `culprit`), the other ranks' "communication" candidates of ranks that
// wait in collectives at least kStragglerWaitPct of their step become "waits_for_straggler":
// named as waiting for it, with no advice to overlap and no saving of their own.
void NameVictims(const std::vector<RankInfo>& models, const std::vector<RankAnalysis>& an,
                 const CollectivesResult& c, int64_t culprit, std::vector<Candidate>* all);

}  // namespace trainprof::analysis
