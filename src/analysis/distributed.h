// The multi-rank part of `trainprof analyze`: the "distributed" section (the TensorBoard
// plugin's distributed view: per rank and step computation, overlap, communication and other
// time; a communication-op table per rank; the collectives matched across ranks with wait,
// transfer, algbw and busbw; the clock offsets between ranks) and the straggler finding, which
// names the rank the others wait for at collectives. docs/trace-analysis.md defines each figure.
//
//   CollectivesResult c = MatchCollectives(models);
//   AddDistributedSection(models, analyses, c, report);
//   std::vector<Candidate> s = StragglerCandidates(models, analyses, c);
#pragma once

#include <vector>

#include "analysis/analyze.h"
#include "analysis/collectives.h"
#include "analysis/findings.h"
#include "report/report.h"

namespace trainprof::analysis {

// A rank is named a straggler when the time the other ranks wait for it, per step, is at least
// this share of the median step time.
inline constexpr double kStragglerWaitPct = 5;

// Per rank and step, the plugin's four figures; they sum to the step time.
struct CommBreakdown {
  int64_t computation_ns = 0;    // computation kernels not overlapped by communication
  int64_t overlap_ns = 0;        // computation and communication kernels at once
  int64_t communication_ns = 0;  // communication kernels not overlapped by computation
  int64_t other_ns = 0;          // no kernel runs
};
// One per step of `s`, in its order.
std::vector<CommBreakdown> ComputeCommBreakdowns(const trace::TraceModel& m, const StepsResult& s);

// Adds the "distributed" section when there are at least two ranks and communication kernels.
// Never fails.
void AddDistributedSection(const std::vector<trace::TraceModel>& models,
                           const std::vector<RankAnalysis>& an, const CollectivesResult& c,
                           report::Report& r);

// The straggler: the rank(s) the others wait for, by how much, at which collectives; at most one
// candidate, empty when no rank crosses kStragglerWaitPct.
std::vector<Candidate> StragglerCandidates(const std::vector<trace::TraceModel>& models,
                                           const std::vector<RankAnalysis>& an,
                                           const CollectivesResult& c);

}  // namespace trainprof::analysis
