// Why the straggler arrives late, from its own trace: its figures per step against the median of
// the other ranks' (GPU compute, data loading, host time with the GPU idle), the one that grew
// most named as the cause, with the compute kernel that grew most and whether it runs longer per
// call (a slower or throttled GPU) or more often (more work). The other ranks' waits do not enter
// these figures: a rank that waits is not slower at anything but the wait.
// docs/trace-analysis.md ("The straggler and its cause") defines each figure.
//
//   CulpritCause why = ExplainCulprit(ranks, analyses, culprit_index);
//   cand.detail += why.text;  // "its GPU compute runs 25.0% longer than the median rank's ..."
#pragma once

#include <string>
#include <vector>

#include "analysis/rank_analysis.h"
#include "analysis/rank_parts.h"

namespace trainprof::analysis {

struct CulpritCause {
  std::string kind;       // "compute", "data_loader", "host"; "" when nothing stands out
  double excess_ns = 0;   // per step, over the median of the other ranks
  double excess_pct = 0;  // of that median
  std::string text;       // the sentence, starting "its ..."
};

// `culprit`: index into `ranks` / `an`. With no other rank, or none with steps, the text says
// there is nothing to compare against.
CulpritCause ExplainCulprit(const std::vector<RankInfo>& ranks, const std::vector<RankAnalysis>& an,
                            size_t culprit);

}  // namespace trainprof::analysis
