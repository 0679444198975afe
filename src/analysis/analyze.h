// `trainprof analyze`: every analysis of every rank, and the Report that shows them.
//
//   std::vector<trace::TraceModel> ranks = ...;           // trace::ReadTraceFiles
//   AnalyzeOptions o;
//   std::vector<RankAnalysis> a = AnalyzeAll(ranks, o);
//   report::Report r = BuildAnalyzeReport(ranks, a, o, "traces/");
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "analysis/rank_analysis.h"
#include "analysis/ranks/collectives.h"
#include "report/report.h"
#include "trace/trace_model.h"

namespace trainprof::analysis {

// Whether `ranks` analysed with `threads` (0: one per core) leave a lone rank a second core.
bool LoneRankHasSpareCore(size_t ranks, int threads);

// collectives.h's MatchCollectives over the ranks' analyses (their comm_ops and comm_names).
CollectivesResult MatchCollectives(const std::vector<RankInfo>& ranks,
                                   const std::vector<RankAnalysis>& analyses);

// Every analysis of one rank, with `hta` as given (AnalyzeAll sets compat_drop_last_step).
RankAnalysis AnalyzeRank(const trace::TraceModel& m, const AnalyzeOptions& o,
                         const HtaOptions& hta);

// One RankAnalysis per model, in the same order; ranks run in parallel.
std::vector<RankAnalysis> AnalyzeAll(const std::vector<trace::TraceModel>& models,
                                     const AnalyzeOptions& o);

// The report from the ranks' infos and analyses (same order): all it needs once the models are
// gone, so `trainprof merge` builds it from summaries (rank_summary.h). With more than
// kInlineRanks ranks (sections/sections.h) per-rank detail tables are csv_only;
// `stream_rank_tables` has their rows made rank by rank as their CSVs are written, from `analyses`,
// which must then outlive every writing of the report (peak memory independent of the number of
// ranks).
// kAcrossRanks: only the sections a step window of digests answers (digest.h): the overview,
// the distributed view, the critical path across ranks and the recommendations.
enum class ReportViews { kAll, kAcrossRanks };
struct RanksMatched;  // cross_rank_path.h
// `matched`: MatchRanks(ranks, analyses) when the caller keeps it for the run's files; null:
// made here.
report::Report BuildAnalyzeReport(const std::vector<RankInfo>& ranks,
                                  const std::vector<RankAnalysis>& analyses,
                                  const AnalyzeOptions& o, const std::string& input,
                                  bool stream_rank_tables = false,
                                  ReportViews views = ReportViews::kAll,
                                  std::shared_ptr<const RanksMatched> matched = nullptr);
report::Report BuildAnalyzeReport(const std::vector<trace::TraceModel>& models,
                                  const std::vector<RankAnalysis>& analyses,
                                  const AnalyzeOptions& o, const std::string& input);

}  // namespace trainprof::analysis
