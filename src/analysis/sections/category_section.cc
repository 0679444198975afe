// The operator category section (categories.h): each category's share of the GPU time, per rank.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <vector>

#include "analysis/ranks/detail_store.h"
#include "analysis/sections/sections.h"
#include "base/text.h"

namespace trainprof::analysis {

using report::Unit;
using report::Value;

namespace {

// The rank's categories with any time, largest first.
std::vector<OpCategory> ByTime(const CategoryResult& c) {
  std::vector<OpCategory> out;
  for (size_t k = 0; k < kNumOpCategories; ++k)
    if (c.by[k].ns > 0) out.push_back(static_cast<OpCategory>(k));
  std::ranges::stable_sort(out, [&](OpCategory a, OpCategory b) {
    return c.by[static_cast<size_t>(a)].ns > c.by[static_cast<size_t>(b)].ns;
  });
  return out;
}

// Headline figures for `trainprof compare` (whatever the device): each category's GPU time per
// step, the mean over the ranks.
void AddMetrics(const AnalyzeInput& in, report::Section& s) {
  std::array<double, kNumOpCategories> per_step{};
  ForEachRankTables(in, [&](size_t i, const RankTables& t) {
    const double steps = static_cast<double>(in.analyses[i].steps.steps.size());
    for (size_t k = 0; k < kNumOpCategories; ++k)
      per_step[k] += static_cast<double>(t.categories.by[k].ns) / std::max<double>(1, steps);
  });
  for (size_t k = 0; k < kNumOpCategories; ++k) {
    const double ns = per_step[k];
    if (ns <= 0) continue;
    const double ranks = static_cast<double>(in.analyses.size());
    const std::string name = OpCategoryName(static_cast<OpCategory>(k));
    std::string key = base::AsciiLower(name);  // "memcpy/memset" -> "memcpy_memset"
    std::ranges::replace(key, '/', '_');
    s.AddMetric(key + "_s", name + " GPU time per step", ns / ranks / 1e9, Unit::kSeconds);
  }
}

}  // namespace

void AddCategorySection(const AnalyzeInput& in, report::Report& r) {
  report::Section& s = r.AddSection("categories", "Operator categories");
  report::Table& t = AddRankTablesTable(
      s, in, "op_categories", "GPU time per operator category",
      {{"rank", "Rank", Unit::kText},
       {"category", "Category", Unit::kText},
       {"gpu_s", "GPU time", Unit::kSeconds},
       {"share_pct", "Share", Unit::kPercent},
       {"kernels", "Kernels", Unit::kCount},
       {"top", "Largest operator", Unit::kText, true, false, 50}},
      [](const RankTables& t, const std::string& rank, std::vector<std::vector<Value>>& rows) {
        const CategoryResult& c = t.categories;
        for (OpCategory k : ByTime(c)) {
          const CategoryShare& sh = c.by[static_cast<size_t>(k)];
          rows.push_back({rank, std::string(OpCategoryName(k)), Seconds(sh.ns), c.share_pct(k),
                          sh.kernels, sh.top_op});
        }
      });
  const bool any = AnyRankTables(
      in, [](const RankTables& tables) { return !ByTime(tables.categories).empty(); });
  RankTables scratch;
  AddRankNotes(
      s.notes, in,
      [&](size_t i) {
        const CategoryResult& c = in.TablesAt(i, scratch).categories;
        // Said when it shows as at least 0.1 %: "0.0 % ... has no operator" is noise.
        if (c.by_kernel_ns == 0 || 1000 * c.by_kernel_ns < c.total_ns) return std::string();
        return fmt::format(
            "Rank {}: {:.1f}% of the GPU time has no operator above it (a GPU-only trace or graph "
            "replays): placed by the kernel's name.",
            kRankMark, 100.0 * static_cast<double>(c.by_kernel_ns) / c.total_ns);
      },
      "op_categories.csv");
  MarkLong(t);
  AddMetrics(in, s);
  if (!any) {
    s.notes.push_back("No GPU kernels, memcpys or memsets in the trace.");
    return;
  }
  t.charts.push_back({.kind = report::ChartKind::kBars,
                      .title = "Share of GPU time per category",
                      .label = "category",
                      .values = {"share_pct"}});
  s.notes.push_back(
      "Each kernel's time goes to the innermost operator that launched it (TraceLens's direct "
      "kernel time) and takes that operator's category; the share is of all GPU work "
      "(docs/trace-analysis.md).");
}

}  // namespace trainprof::analysis
