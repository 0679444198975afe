// The recommendations of `trainprof analyze`, ranked by what they cost: each rule gives a
// candidate per rank with the step time it could save; the same rule's candidates merge across
// ranks into one finding ("Ranks 0–7: 33.1–35.0% ..."); a candidate the data contradicts is
// dropped; and the list is ordered errors first, then root causes by the time they cost, then
// symptoms. docs/trace-analysis.md lists the rules and their thresholds.
//
//   report::Section& rec = r.AddSection("recommendations", "Recommendations");
//   AddFindings(models, analyses, options, rec, collectives, ComputeCrossRankPath(...));
#pragma once

#include <string>
#include <vector>

#include "analysis/rank_analysis.h"
#include "analysis/rank_parts.h"
#include "analysis/ranks/collectives.h"
#include "analysis/ranks/cross_rank_path.h"
#include "report/report.h"

namespace trainprof::analysis {

// Whether the rank ran a training loop: a backward or optimizer phase ("Optimizer.step#..."
// annotations), or autograd's backward operators. Inference and serving traces have neither,
// so no data-loader, batch-size or activation-memory advice applies to them.
bool HasTrainingLoop(const RankAnalysis& a);

// Ranks as ranges, ascending, each once: "0–3, 5, 7–8".
std::string RankRanges(std::vector<int64_t> ranks);

// Every rule's candidates for one rank (no merging, no ranking).
std::vector<Candidate> RankCandidates(const trace::TraceModel& m, const RankAnalysis& a,
                                      const AnalyzeOptions& o);

// Ranks whose mean step is over 10 % longer than the median rank's: at most one candidate.
std::vector<Candidate> ImbalanceCandidates(const std::vector<RankInfo>& models,
                                           const std::vector<RankAnalysis>& an);

// Merges, drops contradicted candidates, ranks, and writes them as the section's findings. The
// straggler comes from `collectives` when it names one (with its share of `path`), else from
// the step times (ImbalanceCandidates).
void AddFindings(const std::vector<RankInfo>& models, const std::vector<RankAnalysis>& an,
                 const AnalyzeOptions& o, report::Section& rec,
                 const CollectivesResult& collectives, const CrossRankPath& path);

inline constexpr double kRankImbalancePct = 10;

}  // namespace trainprof::analysis
