// A rank's summary: everything the multi-rank report needs from one trace file (RankInfo and
// RankAnalysis, with the options it was analysed with), so the model can be dropped as soon as
// the rank is analysed. `trainprof analyze` builds its report from summaries; `--summary-only`
// writes them to files, and `trainprof merge` (or `--mpi`, rank 0) builds the same report from
// those files. docs/trace-analysis.md ("Summaries and merge") documents the file format.
//
//   RankSummary s = SummariseRank(model, options);     // then drop the model
//   std::string bytes = EncodeSummary(s);               // the .tpsum file
//   StatusOr<RankSummary> back = DecodeSummary(bytes);
//   StatusOr<Summaries> all = CombineSummaries(std::move(summaries), "traces/");
//   report::Report r = BuildAnalyzeReport(all->ranks, all->analyses, all->options, all->input);
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/rank_analysis.h"
#include "report/report.h"
#include "trace/trace_model.h"
#include "trainprof/status.h"

namespace trainprof::analysis {

struct RankSummary {
  AnalyzeOptions options;  // as analysed (threads is not kept)
  std::string input;       // the run's folder (or file) as `analyze` was given it
  RankInfo info;
  RankAnalysis analysis;
};

// Every analysis of one rank. With --hta-compat, whether HTA's last step is dropped is decided
// from this rank's own ProfilerStep names (docs/trace-analysis.md).
RankSummary SummariseRank(const trace::TraceModel& m, const AnalyzeOptions& o,
                          const std::string& input);

// The summary held in as little memory as it takes (every list at its length, as decoded): a
// rank analysed in place holds its lists' spare room, a third of it for a large world's ranks.
// A summary whose detail was spilled (ranks/detail_store.h) keeps it where it is.
void Compact(RankSummary& s);

// One of many ranks' summaries kept until the report: its detail moved to `store`
// (ranks/detail_store.h; none: kept in it), then the rest compacted (Compact), in that order, so
// the detail is encoded once.
void KeepUntilReport(const std::shared_ptr<DetailStore>& store, RankSummary& s);

// The file format: "TPSUMMARY", a format version, then the fields in a fixed order
// (little-endian integers and doubles, strings and lists with their length first).
inline constexpr uint32_t kSummaryVersion = 13;
inline constexpr std::string_view kSummaryExtension = ".tpsum";
std::string EncodeSummary(const RankSummary& s);
// Errors: not a summary, another version, or cut short (the message says which).
StatusOr<RankSummary> DecodeSummary(std::string_view bytes);
// The options as the file holds them: equal bytes, equal options.
std::string EncodeOptions(const AnalyzeOptions& o);

// The ranks of one report, in order, split for BuildAnalyzeReport.
struct Summaries {
  AnalyzeOptions options;
  std::string input;
  std::vector<RankInfo> ranks;
  std::vector<RankAnalysis> analyses;
};

// Sorts by rank (stable: equal ranks keep their order) and gives two summaries of one rank each
// a "duplicate_rank" diagnostic naming the other, as trace::ReadTraceFiles does for models.
// `input` is the summaries' own when they agree, else `fallback`. Errors: no summary, or they
// were analysed with different options (naming the first file that differs).
StatusOr<Summaries> CombineSummaries(std::vector<RankSummary> summaries,
                                     const std::string& fallback);

}  // namespace trainprof::analysis
