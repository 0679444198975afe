#include "analysis/rank_summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "analysis/analyze.h"
#include "analysis/hta_launches.h"
#include "base/diagnostics.h"

namespace trainprof::analysis {

RankSummary SummariseRank(const trace::TraceModel& m, const AnalyzeOptions& o,
                          const std::string& input) {
  RankSummary s;
  s.options = o;
  s.options.threads = 0;
  s.input = input;
  s.info = InfoOf(m);
  s.analysis = AnalyzeRank(m, o, RankHtaOptions(m, o.hta));
  return s;
}

namespace {

void MarkDuplicateRanks(std::vector<RankSummary>& all) {
  for (size_t i = 0; i < all.size(); ++i) {
    for (size_t j = 0; j < all.size(); ++j) {
      RankInfo& a = all[i].info;
      if (i == j || a.rank != all[j].info.rank) continue;
      a.diagnostics.push_back({base::DiagnosticId::kDuplicateRank, 1,
                               fmt::format("{}: rank {} also comes from {}; each file is "
                                           "analysed as its own span",
                                           a.path, a.rank, all[j].info.path)});
      break;
    }
  }
}

}  // namespace

StatusOr<Summaries> CombineSummaries(std::vector<RankSummary> all, const std::string& fallback) {
  if (all.empty()) return InvalidArgument("no rank summary to merge");
  const std::string options = EncodeOptions(all.front().options);
  for (const RankSummary& s : all) {
    if (EncodeOptions(s.options) != options) {
      return InvalidArgument(fmt::format(
          "{} was analysed with other options than {} (--steps, --hta-compat, the cutoffs, "
          "--dataloader-pattern, --critical-path must be the same for every rank)",
          s.info.path, all.front().info.path));
    }
  }
  std::stable_sort(all.begin(), all.end(), [](const RankSummary& a, const RankSummary& b) {
    return a.info.rank < b.info.rank;
  });
  MarkDuplicateRanks(all);
  Summaries out;
  out.options = all.front().options;
  out.input = all.front().input;
  for (const RankSummary& s : all)
    if (s.input != out.input) out.input = fallback;
  out.ranks.reserve(all.size());
  out.analyses.reserve(all.size());
  for (RankSummary& s : all) {
    out.ranks.push_back(std::move(s.info));
    out.analyses.push_back(std::move(s.analysis));
  }
  return out;
}

}  // namespace trainprof::analysis
