// A rank's summary: everything the multi-rank report needs from one trace file (RankInfo and
// RankAnalysis, with the options it was analysed with), so the model can be dropped as soon as
// the rank is analysed. `trainprof analyze` builds its report from summaries; `--summary-only`
// writes them to files, and `trainprof merge` (or `--mpi`, rank 0) builds the same report from
// those files. docs/trace-analysis.md ("Summaries and merge") documents the file format.
//
//   RankSummary s = SummariseRank(model, options);     // then drop the model
//   std::string bytes = EncodeSummary(s);               // the .tpsum file
//   StatusOr<RankSummary> back = DecodeSummary(bytes);
//   RankResults results(files.size());                  // one row per file, in file order
//   results.Set(i, std::move(s));                       // from any thread, each its own row
//   StatusOr<Summaries> all = CombineSummaries(std::move(results), "traces/");
//   report::Report r = BuildAnalyzeReport(all->ranks, all->analyses, all->options, all->input);
#pragma once

#include <functional>
#include <memory>
#include <mutex>
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
inline constexpr uint32_t kSummaryVersion = 16;
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

// Every file's result of one run, in the files' order, held from the start in the columns the
// report reads (Summaries::ranks and ::analyses): a summary moves once, into its row, and
// CombineSummaries cuts the failed rows and sorts the rest by rank in place, so a run's results
// are never held twice on their way to the report (a summary's fixed fields are a kilobyte: a
// second copy of 100,000 ranks' is 100 MB). The options and input, the same for nearly every
// row, are kept once per distinct value.
class RankResults {
 public:
  // `files` rows, each "not read" until set.
  explicit RankResults(size_t files = 0);
  RankResults(RankResults&&) noexcept;
  RankResults& operator=(RankResults&&) noexcept;
  ~RankResults();

  size_t size() const { return status_.size(); }
  // Row i's result; several threads may set rows at once, each its own.
  void Set(size_t i, StatusOr<RankSummary> result);
  const Status& status(size_t i) const { return status_[i]; }
  const RankInfo& info(size_t i) const { return infos_[i]; }
  RankAnalysis& analysis(size_t i) { return analyses_[i]; }
  // Calls `f` with row i (a read one) as a whole summary, then puts it back: for what reads or
  // changes one (--summary-only's files, the digests, merge --step-range). Several threads may
  // call it at once, each on its own row.
  void WithSummary(size_t i, const std::function<void(RankSummary&)>& f);
  // Cuts the rows that were not read, keeping the others' order.
  void CutFailed();

 private:
  friend StatusOr<Summaries> CombineSummaries(RankResults, const std::string&);
  struct Origin {
    AnalyzeOptions options;
    std::string input;
    std::string encoded;  // the options (EncodeOptions), to compare
  };
  std::vector<Status> status_;
  std::vector<RankInfo> infos_;
  std::vector<RankAnalysis> analyses_;
  std::vector<std::shared_ptr<const Origin>> origins_;   // per row; null: not read
  std::vector<std::shared_ptr<const Origin>> distinct_;  // the rows' origins, each once
  std::unique_ptr<std::mutex> origin_lock_;              // Set's, for distinct_
};

// The rows read, sorted by rank (stable: equal ranks keep their order); two summaries of one
// rank each get a "duplicate_rank" diagnostic naming the other, as trace::ReadTraceFiles does
// for models. `input` is the summaries' own when they agree, else `fallback`. Errors: no row
// read, or rows analysed with different options (naming the first file that differs).
StatusOr<Summaries> CombineSummaries(RankResults results, const std::string& fallback);

}  // namespace trainprof::analysis
