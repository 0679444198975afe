#include "analysis/ranks/culprit.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <unordered_map>

#include "analysis/kernel_class.h"
#include "analysis/ranks/detail_store.h"
#include "analysis/units.h"
#include "base/stats.h"
#include "base/text.h"

namespace trainprof::analysis {
namespace {

enum CauseFigure { kCompute, kData, kHost, kNumFigures };
constexpr std::array<const char*, kNumFigures> kKinds = {"compute", "data_loader", "host"};

// A cause counts when it grew by this share of its own median and of the median step.
constexpr double kOwnPct = 5, kStepPct = 2;
constexpr size_t kCulpritNameChars = 60;

// One rank's figures per step; none without steps.
struct CulpritFigures {
  bool ok = false;
  std::array<double, kNumFigures> ns{};
  double step_ns = 0, steps = 0;
};

CulpritFigures CulpritFiguresOf(const RankAnalysis& a) {
  CulpritFigures p;
  const Overview& o = a.overview;
  if (o.steps.empty()) return p;
  p.ok = true;
  p.steps = static_cast<double>(o.steps.size());
  p.step_ns = o.avg_total_ns;
  if (a.comm_breakdowns.empty()) {
    p.ns[kCompute] = o.avg_ns[kKernel];
  } else {  // compute kernels' time, alone or beside communication
    double sum = 0;
    for (const CommBreakdown& b : a.comm_breakdowns)
      sum += static_cast<double>(b.computation_ns + b.overlap_ns);
    p.ns[kCompute] = sum / static_cast<double>(a.comm_breakdowns.size());
  }
  p.ns[kData] = o.avg_ns[kDataLoader];
  p.ns[kHost] = o.avg_ns[kCpuExec] + o.avg_ns[kRuntime] + o.avg_ns[kOtherTime];
  return p;
}

// The compute kernel whose time per step grew most, with its calls and mean per call against
// the other ranks' medians.
struct KernelGrowth {
  std::string name;
  double excess_ns = 0, call_ratio = 1, mean_ratio = 1;
};

KernelGrowth GrownKernel(const std::vector<RankAnalysis>& an,
                         const std::vector<CulpritFigures>& per, size_t culprit) {
  struct Others {
    std::vector<double> per_step, calls, mean;
  };
  std::unordered_map<std::string, Others> others;
  std::vector<KernelRow> mine, scratch;  // a spilled rank's read back (ranks/detail_store.h)
  const std::vector<KernelRow>& culprits = KernelsOf(an[culprit], mine);
  for (const KernelRow& k : culprits)
    if (!IsCommunicationKernel(k.name)) others[k.name];
  for (size_t i = 0; i < an.size(); ++i) {
    if (i == culprit || !per[i].ok) continue;
    for (auto& [name, o] : others) o.per_step.push_back(0), o.calls.push_back(0);
    for (const KernelRow& k : KernelsOf(an[i], scratch)) {
      auto it = others.find(k.name);
      if (it == others.end()) continue;
      it->second.per_step.back() += static_cast<double>(k.total_ns) / per[i].steps;
      it->second.calls.back() += static_cast<double>(k.calls) / per[i].steps;
      it->second.mean.push_back(k.mean_ns());
    }
  }
  KernelGrowth best;
  const double steps = per[culprit].steps;
  for (const KernelRow& k : culprits) {
    auto it = others.find(k.name);
    if (it == others.end() || it->second.per_step.empty()) continue;
    double excess = static_cast<double>(k.total_ns) / steps - base::Median(it->second.per_step);
    if (excess <= best.excess_ns) continue;
    double calls = base::Median(it->second.calls);
    double mean = it->second.mean.empty() ? 0 : base::Median(it->second.mean);
    best = {k.name, excess, calls > 0 ? static_cast<double>(k.calls) / steps / calls : 0,
            mean > 0 ? k.mean_ns() / mean : 0};
  }
  return best;
}

// The GPU model most of the other ranks have ("" when none is known).
std::string CommonDevice(const std::vector<RankInfo>& ranks, size_t culprit) {
  std::map<std::string, int64_t> count;
  for (size_t i = 0; i < ranks.size(); ++i)
    if (i != culprit && !ranks[i].devices.empty()) ++count[ranks[i].devices.front().name];
  auto it = std::ranges::max_element(count, {}, [](const auto& kv) { return kv.second; });
  return it == count.end() ? "" : it->first;
}

std::string DeviceClause(const std::vector<RankInfo>& ranks, size_t culprit) {
  if (ranks[culprit].devices.empty()) return "";
  const trace::DeviceInfo& d = ranks[culprit].devices.front();
  std::string common = CommonDevice(ranks, culprit);
  if (!common.empty() && common != d.name)
    return fmt::format(" Its GPU is another model: device {} is {}, the others' {}.", d.id, d.name,
                       common);
  return fmt::format(" Its device {} is {}, as the others'.", d.id, d.name);
}

std::string ComputeText(const std::vector<RankInfo>& ranks, const std::vector<RankAnalysis>& an,
                        const std::vector<CulpritFigures>& per, size_t culprit, double median) {
  const double mine = per[culprit].ns[kCompute];
  std::string s = fmt::format(
      "its GPU compute runs {:.1f}% longer than the median rank's ({:.3f} against {:.3f} ms a "
      "step)",
      100 * (mine / median - 1), Ms(mine), Ms(median));
  KernelGrowth k = GrownKernel(an, per, culprit);
  if (!k.name.empty()) {
    std::string name = base::Ellipsize(k.name, kCulpritNameChars);
    if (k.call_ratio > 1 + kOwnPct / 100)
      s += fmt::format(
          "; {} grew most (+{:.3f} ms a step) and runs {:.1f}% more often: more work on this rank "
          "(uneven batches or sequence lengths)",
          name, Ms(k.excess_ns), 100 * (k.call_ratio - 1));
    else
      s += fmt::format(
          "; {} grew most (+{:.3f} ms a step): {:.1f}% longer per call with as many calls, as a "
          "slower or throttled GPU gives",
          name, Ms(k.excess_ns), 100 * (k.mean_ratio - 1));
  }
  return s + "." + DeviceClause(ranks, culprit);
}

std::string CauseText(CauseFigure f, double mine, double median) {
  if (f == kData)
    return fmt::format(
        "its data loading takes {:.3f} ms a step against the median rank's {:.3f} ms: its input "
        "pipeline holds it back (DataLoader workers, storage, CPU on its host).",
        Ms(mine), Ms(median));
  return fmt::format(
      "its GPU idles with the host busy or between operators {:.3f} ms a step against the "
      "median rank's {:.3f} ms: its host holds it back (Python, CPU contention, a "
      "synchronisation).",
      Ms(mine), Ms(median));
}

}  // namespace

CulpritCause ExplainCulprit(const std::vector<RankInfo>& ranks, const std::vector<RankAnalysis>& an,
                            size_t culprit) {
  std::vector<CulpritFigures> per;
  per.reserve(an.size());
  for (const RankAnalysis& a : an) per.push_back(CulpritFiguresOf(a));
  std::array<std::vector<double>, kNumFigures> others;
  std::vector<double> steps;
  for (size_t i = 0; i < per.size(); ++i) {
    if (i == culprit || !per[i].ok) continue;
    for (int f = 0; f < kNumFigures; ++f) others[f].push_back(per[i].ns[f]);
    steps.push_back(per[i].step_ns);
  }
  CulpritCause out;
  if (!per[culprit].ok || steps.empty()) {
    out.text = "no other rank with steps to compare its own figures with.";
    return out;
  }
  const double median_step = base::Median(steps);
  int best = -1;
  double best_excess = 0;
  std::array<double, kNumFigures> median{};
  for (int f = 0; f < kNumFigures; ++f) {
    median[f] = base::Median(others[f]);
    double excess = per[culprit].ns[f] - median[f];
    if (excess > best_excess && excess >= kOwnPct / 100 * median[f] &&
        excess >= kStepPct / 100 * median_step)
      best = f, best_excess = excess;
  }
  if (best < 0) {
    out.text =
        "its own trace shows no more GPU compute, data loading or host time than the median "
        "rank's: look at what it waits for outside the trace (its network path, a blocking call, "
        "the order it issues collectives in).";
    return out;
  }
  out.kind = kKinds[best];
  out.excess_ns = best_excess;
  out.excess_pct = median[best] > 0 ? 100 * best_excess / median[best] : 0;
  out.text = best == kCompute
                 ? ComputeText(ranks, an, per, culprit, median[kCompute])
                 : CauseText(static_cast<CauseFigure>(best), per[culprit].ns[best], median[best]);
  return out;
}

}  // namespace trainprof::analysis
