#include <algorithm>
#include <cmath>
#include <map>

#include "analysis/hta/hta.h"

namespace trainprof::analysis {
namespace {

bool Allowed(const std::string& name, const std::vector<std::string>& allowlist) {
  return std::ranges::any_of(
      allowlist, [&](const std::string& p) { return name.find(p) != std::string::npos; });
}

// One "others" or kept row from the per-name rows it holds.
KernelStats FoldedRow(const std::string& name, const std::vector<const KernelStats*>& members) {
  KernelStats s{.name = name, .type = members.front()->type};
  s.min_ns = members.front()->sum_ns;
  for (const KernelStats* k : members) {
    s.count += k->count;
    s.sum_ns += k->sum_ns;
    s.min_ns = std::min(s.min_ns, k->sum_ns);
    s.max_ns = std::max(s.max_ns, k->sum_ns);
  }
  const double size = static_cast<double>(members.size());
  s.mean_ns = static_cast<double>(s.sum_ns) / size;
  double sq = 0;
  for (const KernelStats* k : members) {
    const double d = static_cast<double>(k->sum_ns) - s.mean_ns;
    sq += d * d;
  }
  s.std_ns = members.size() > 1 ? std::sqrt(sq / (size - 1)) : 0;
  return s;
}

}  // namespace

std::vector<KernelStats> HtaFold(std::vector<KernelStats> rows, const HtaFoldRule& rule) {
  std::ranges::sort(rows, [](const KernelStats& a, const KernelStats& b) {
    return a.sum_ns != b.sum_ns ? a.sum_ns > b.sum_ns : a.name < b.name;
  });
  const size_t n = rows.size();
  if (n <= rule.top) {
    for (KernelStats& s : rows) {
      s.mean_ns = s.count > 0 ? static_cast<double>(s.sum_ns) / static_cast<double>(s.count) : 0;
      if (std::isnan(s.std_ns)) s.std_ns = 0;
    }
    return rows;
  }
  std::vector<double> cum(n);
  double run = 0;
  for (size_t i = 0; i < n; ++i) cum[i] = run += static_cast<double>(rows[i].sum_ns);
  const double pos = rule.duration_ratio * static_cast<double>(n - 1);
  const size_t lo = std::min(static_cast<size_t>(std::max(pos, 0.0)), n - 1);
  const size_t hi = std::min(lo + 1, n - 1);
  const double q = cum[lo] + (cum[hi] - cum[lo]) * (pos - static_cast<double>(lo));
  std::map<std::string, std::vector<const KernelStats*>> groups;
  for (size_t i = 0; i < n; ++i) {
    const bool folded = (i >= rule.top || cum[i] > q) && !Allowed(rows[i].name, rule.allowlist);
    groups[folded ? "others" : rows[i].name].push_back(&rows[i]);
  }
  std::vector<KernelStats> out;
  out.reserve(groups.size());
  for (const auto& [name, members] : groups) out.push_back(FoldedRow(name, members));
  return out;
}

}  // namespace trainprof::analysis
