// The multi-rank part of `trainprof analyze`: the "distributed" section (the TensorBoard
// plugin's distributed view: per rank and step computation, overlap, communication and other
// time; a communication-op table per rank; the collectives matched across ranks with wait,
// transfer, algbw and busbw; the clock offsets between ranks) and the straggler finding, which
// names the rank the others wait for at collectives. docs/trace-analysis.md defines each figure.
//
//   CollectivesResult c = MatchCollectives(models);
//   AddDistributedView(in, report);  // sections/distributed_section.cc: two ranks or more
//   std::vector<Candidate> s = StragglerCandidates(models, analyses, c, path);
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "analysis/rank_analysis.h"
#include "analysis/rank_parts.h"
#include "analysis/ranks/collectives.h"
#include "analysis/ranks/cross_rank_path.h"
#include "report/report.h"

namespace trainprof::analysis {

// A rank is named a straggler when the time the other ranks wait for it, per step, is at least
// this share of the median step time.
inline constexpr double kStragglerWaitPct = 5;

// One per step of `s`, in its order.
std::vector<CommBreakdown> ComputeCommBreakdowns(const trace::TraceModel& m, const StepsResult& s);

// What each rank cost the others at the collectives where it arrived last.
struct LateRank {
  int64_t late_at = 0;                   // collectives where it was last
  int64_t caused_ns = 0;                 // the sum of the other ranks' waits there
  double per_other_ns = 0;               // the same, per waiting rank
  std::map<std::string, int64_t> types;  // collective type -> times it was last
};
// One per model (`n_models`), from the collectives' latest arrivals.
std::vector<LateRank> LateRanks(size_t n_models, const CollectivesResult& c);
// The median over ranks of the analysed steps' count and of the mean step time.
std::pair<double, double> MedianSteps(const std::vector<RankAnalysis>& an);
// "allreduce ×3, broadcast ×1".
std::string Types(const std::map<std::string, int64_t>& types);

// The straggler: the rank(s) the others wait for, by how much, at which collectives, and the
// share of `path` (ComputeCrossRankPath of the same ranks) on it; at most one candidate, empty
// when no rank crosses kStragglerWaitPct.
std::vector<Candidate> StragglerCandidates(const std::vector<RankInfo>& models,
                                           const std::vector<RankAnalysis>& an,
                                           const CollectivesResult& c, const CrossRankPath& path);

// With a straggler (rank `culprit`), the other ranks' "communication" candidates of ranks that
// wait in collectives at least kStragglerWaitPct of their step become "waits_for_straggler":
// named as waiting for it, with no advice to overlap and no saving of their own.
class Victims {
 public:
  Victims(const std::vector<RankInfo>& models, const std::vector<RankAnalysis>& an,
          const CollectivesResult& c, int64_t culprit);
  void Name(Candidate& k) const;  // a candidate of any rank

 private:
  int64_t culprit_;
  std::map<int64_t, double> wait_;  // rank -> its waits in collectives, per step
  std::map<int64_t, double> step_;  // rank -> its mean step time (its first model's)
};

}  // namespace trainprof::analysis
