// The "cross_rank_path" section: the critical path across ranks (cross_rank_path.h walks it),
// its length, the ranks on it and its time by category and by rank.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "analysis/ranks/cross_rank_path.h"
#include "analysis/sections/sections.h"

namespace trainprof::analysis {

using report::Unit;

namespace {

struct RankShare {
  size_t model = 0;
  std::array<int64_t, kNumPathCategories> ns{};
  int64_t total() const { return ns[0] + ns[1] + ns[2] + ns[3]; }
};

std::vector<RankShare> SharesByRank(const CrossRankPath& p) {
  std::map<size_t, RankShare> by;
  for (const PathSegment& s : p.segments) {
    RankShare& r = by[s.model];
    r.model = s.model;
    for (int k = 0; k < kNumPathCategories; ++k) r.ns[k] += s.ns[k];
  }
  std::vector<RankShare> out;
  for (auto& [m, r] : by) out.push_back(r);
  std::ranges::stable_sort(out, std::greater<>(), &RankShare::total);
  return out;
}

double Pct(int64_t part, int64_t whole) {
  return whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0;
}

void AddPathTables(const AnalyzeInput& in, const CrossRankPath& p, report::Section& s) {
  const int64_t len = p.length_ns();
  report::Table& cat = s.AddTable("path_by_category", "The path's time by category",
                                  {{"category", "Category", Unit::kText},
                                   {"time_s", "Time", Unit::kSeconds},
                                   {"share_pct", "Share", Unit::kPercent}});
  std::array<int64_t, kNumPathCategories> total{};
  for (const PathSegment& x : p.segments)
    for (int k = 0; k < kNumPathCategories; ++k) total[k] += x.ns[k];
  for (int k = 0; k < kNumPathCategories; ++k)
    cat.rows.push_back({kPathCategoryNames[k], Seconds(total[k]), Pct(total[k], len)});
  std::vector<report::Column> cols = {{"rank", "Rank", Unit::kText},
                                      {"time_s", "On the path", Unit::kSeconds},
                                      {"share_pct", "Share", Unit::kPercent}};
  for (const char* name : kPathCategoryNames)
    cols.push_back({fmt::format("{}_s", name), name, Unit::kSeconds});
  report::Table& t = s.AddTable("path_by_rank", "The path's time by rank", std::move(cols));
  for (const RankShare& r : SharesByRank(p)) {
    std::vector<report::Value> row = {in.RankLabel(r.model), Seconds(r.total()),
                                      Pct(r.total(), len)};
    for (int64_t v : r.ns) row.push_back(Seconds(v));
    t.rows.push_back(std::move(row));
  }
  MarkLong(t);
}

}  // namespace

void AddCrossRankPathSection(const AnalyzeInput& in, report::Report& r) {
  if (in.ranks.size() < 2 || in.collectives.collectives.empty()) return;
  const CrossRankPath& p = in.cross_path;
  report::Section& s = r.AddSection("cross_rank_path", "Critical path across ranks");
  if (!p.note.empty()) {
    s.notes.push_back(p.note + " No critical path across ranks.");
    return;
  }
  const std::vector<RankShare> shares = SharesByRank(p);
  s.AddMetric("length_s", "Length of the path", Seconds(p.length_ns()), Unit::kSeconds);
  if (p.steps > 0)
    s.AddMetric("per_step_s", "Per step", Seconds(p.length_ns()) / static_cast<double>(p.steps),
                Unit::kSeconds);
  s.AddMetric("ranks_on_path", "Ranks on the path", static_cast<int64_t>(shares.size()),
              Unit::kCount);
  s.AddMetric("jumps", "Moves to another rank", p.jumps(), Unit::kCount);
  if (!shares.empty())
    s.AddMetric("top_rank_share_pct",
                fmt::format("Of the path on rank {}", in.RankLabel(shares[0].model)),
                Pct(shares[0].total(), p.length_ns()), Unit::kPercent);
  AddPathTables(in, p, s);
  s.notes.push_back(
      "Walked back from the last rank to finish: on a rank to the end of its latest collective, "
      "then to that collective's last arrival, on the rank that arrived last. A rank's time "
      "between collectives is split by its own trace (GPU compute, data loader with the GPU idle, "
      "the rest host); a collective's time after its last arrival is communication. The ranks' "
      "clocks are aligned by the offsets above. cross_rank_path.trace.json shows it in Perfetto.");
}

}  // namespace trainprof::analysis
