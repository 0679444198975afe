#include "analysis/rank_summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <set>
#include <utility>

#include "analysis/analyze.h"
#include "analysis/hta/hta_launches.h"
#include "analysis/ranks/detail_store.h"
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

void Compact(RankSummary& s) {
  // A spilled summary is compacted without its detail (EncodeSummary would read it back): the
  // lists it left are empty, and its record in the scratch file stays its own.
  SpilledDetail spilled = std::exchange(s.analysis.spilled, {});
  StatusOr<RankSummary> back = DecodeSummary(EncodeSummary(s));
  if (back.ok()) s = std::move(*back);
  s.analysis.spilled = std::move(spilled);
}

namespace {

// `all` sorted by rank: each of two ranks or more of one number names the first other one.
void MarkDuplicateRanks(std::vector<RankInfo>& all) {
  for (size_t b = 0, e = 0; b < all.size(); b = e) {
    for (e = b + 1; e < all.size() && all[e].rank == all[b].rank;) ++e;
    if (e - b < 2) continue;
    for (size_t i = b; i < e; ++i) {
      RankInfo& a = all[i];
      a.diagnostics.push_back({base::DiagnosticId::kDuplicateRank, 1,
                               fmt::format("{}: rank {} also comes from {}; each file is "
                                           "analysed as its own span",
                                           a.path, a.rank, all[i == b ? b + 1 : b].path)});
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
  // By rank, stable; an index is sorted, so each summary (dozens of vectors) moves once, into
  // its place in `out`.
  std::vector<size_t> order(all.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return all[a].info.rank < all[b].info.rank; });
  Summaries out;
  out.options = all[order[0]].options;
  out.input = all[order[0]].input;
  for (const RankSummary& s : all)
    if (s.input != out.input) out.input = fallback;
  out.ranks.reserve(all.size());
  out.analyses.reserve(all.size());
  for (size_t i : order) {
    out.ranks.push_back(std::move(all[i].info));
    out.analyses.push_back(std::move(all[i].analysis));
  }
  MarkDuplicateRanks(out.ranks);
  return out;
}

void KeepUntilReport(const std::shared_ptr<DetailStore>& store, RankSummary& s) {
  Spill(store, s.analysis);
  Compact(s);
}

}  // namespace trainprof::analysis
