#include "analysis/rank_summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <mutex>
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

RankResults::RankResults(size_t files)
    : status_(files, InvalidArgument("not read")),
      infos_(files),
      // A row not yet read holds no tables nor lists: a default RankTables is 1.3 KB, 130 MB
      // for a hundred thousand rows before the first is read.
      analyses_(files, RankAnalysis{.tables = base::Box<RankTables>(nullptr),
                                    .lists = base::Box<RankLists>(nullptr),
                                    .memory = {.lists = base::Box<MemoryLists>(nullptr)}}),
      origins_(files),
      origin_lock_(std::make_unique<std::mutex>()) {}
RankResults::RankResults(RankResults&&) noexcept = default;
RankResults& RankResults::operator=(RankResults&&) noexcept = default;
RankResults::~RankResults() = default;

void RankResults::Set(size_t i, StatusOr<RankSummary> result) {
  if (!result.ok()) {
    status_[i] = result.status();
    return;
  }
  RankSummary& s = *result;
  status_[i] = Status::Ok();
  infos_[i] = std::move(s.info);
  analyses_[i] = std::move(s.analysis);
  std::string options = EncodeOptions(s.options);
  std::lock_guard<std::mutex> lock(*origin_lock_);
  for (const auto& o : distinct_) {  // one in a run, two or three in a merge at most
    if (o->input == s.input && o->encoded == options) {
      origins_[i] = o;
      return;
    }
  }
  origins_[i] = distinct_.emplace_back(std::make_shared<const Origin>(
      Origin{std::move(s.options), std::move(s.input), std::move(options)}));
}

void RankResults::WithSummary(size_t i, const std::function<void(RankSummary&)>& f) {
  RankSummary s{.options = origins_[i]->options,
                .input = origins_[i]->input,
                .info = std::move(infos_[i]),
                .analysis = std::move(analyses_[i])};
  f(s);
  infos_[i] = std::move(s.info);
  analyses_[i] = std::move(s.analysis);
}

void RankResults::CutFailed() {
  size_t kept = 0;
  for (size_t i = 0; i < size(); ++i) {
    if (!status_[i].ok()) continue;
    if (kept != i) {
      infos_[kept] = std::move(infos_[i]);
      analyses_[kept] = std::move(analyses_[i]);
      origins_[kept] = std::move(origins_[i]);
      status_[kept] = Status::Ok();
    }
    ++kept;
  }
  status_.resize(kept);
  infos_.resize(kept);
  analyses_.resize(kept);
  origins_.resize(kept);
}

namespace {

// Puts row order[k] at row k of each column, in place: each cycle of the permutation is walked
// once with swaps, so no column is copied.
template <class... Column>
void Permute(const std::vector<size_t>& order, Column&... columns) {
  std::vector<bool> placed(order.size());
  for (size_t start = 0; start < order.size(); ++start) {
    for (size_t k = start; !placed[k]; k = order[k]) {
      placed[k] = true;
      if (order[k] != start) (std::swap(columns[k], columns[order[k]]), ...);
    }
  }
}

}  // namespace

StatusOr<Summaries> CombineSummaries(RankResults all, const std::string& fallback) {
  all.CutFailed();
  if (all.size() == 0) return InvalidArgument("no rank summary to merge");
  const auto& first = all.origins_[0];
  for (size_t i = 1; i < all.size(); ++i) {
    if (all.origins_[i]->encoded != first->encoded) {
      return InvalidArgument(fmt::format(
          "{} was analysed with other options than {} (--steps, --hta-compat, the cutoffs, "
          "--dataloader-pattern, --critical-path must be the same for every rank)",
          all.infos_[i].path, all.infos_[0].path));
    }
  }
  Summaries out;
  out.options = first->options;
  out.input = first->input;
  for (const auto& o : all.origins_)
    if (o->input != out.input) out.input = fallback;
  // By rank, stable; the rows are put in that order in place.
  std::vector<size_t> order(all.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return all.infos_[a].rank < all.infos_[b].rank; });
  Permute(order, all.infos_, all.analyses_);
  out.ranks = std::move(all.infos_);
  out.analyses = std::move(all.analyses_);
  MarkDuplicateRanks(out.ranks);
  return out;
}

void KeepUntilReport(const std::shared_ptr<DetailStore>& store, RankSummary& s) {
  Spill(store, s.analysis);
  Compact(s);
}

}  // namespace trainprof::analysis
