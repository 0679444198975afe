#include "analysis/ranks/distributed.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "analysis/intervals.h"
#include "analysis/ranks/culprit.h"
#include "analysis/units.h"
#include "base/stats.h"

namespace trainprof::analysis {

using report::Unit;
using report::Value;

std::vector<LateRank> LateRanks(size_t n_models, const CollectivesResult& c) {
  std::vector<LateRank> out(n_models);
  for (const Collective& x : c.collectives) {
    LateRank& l = out[x.ops[x.late].model];
    int64_t caused = x.caused_wait_ns();
    if (caused <= 0) continue;
    ++l.late_at;
    l.caused_ns += caused;
    l.per_other_ns += static_cast<double>(caused) / static_cast<double>(x.ops.size() - 1);
    ++l.types[x.type.empty() ? "unknown" : x.type];
  }
  return out;
}

// The median over ranks of the analysed steps' count and of the mean step time.
std::pair<double, double> MedianSteps(const std::vector<RankAnalysis>& an) {
  std::vector<double> counts, times;
  for (const RankAnalysis& a : an) {
    if (a.overview.steps.empty()) continue;
    counts.push_back(static_cast<double>(a.overview.steps.size()));
    times.push_back(a.overview.avg_total_ns);
  }
  // No rank with steps: one step of 0 s, as the report has always shown it.
  if (times.empty()) return {1.0, 0.0};
  return {std::max(1.0, base::Median(counts)), base::Median(times)};
}

std::string Types(const std::map<std::string, int64_t>& types) {
  std::string s;
  for (const auto& [t, n] : types) s += fmt::format("{}{} ×{}", s.empty() ? "" : ", ", t, n);
  return s;
}

std::vector<CommBreakdown> ComputeCommBreakdowns(const trace::TraceModel& m, const StepsResult& s) {
  Intervals compute, comm;
  const std::vector<bool> is_comm = CommunicationNames(m);
  for (size_t i = 0; i < m.size(); ++i) {
    if (m.kind[i] != trace::EventKind::kKernel) continue;
    AppendForUnion(is_comm[m.name[i]] ? comm : compute, {m.ts_ns[i], m.end_ns(i)});
  }
  compute = Union(std::move(compute));
  comm = Union(std::move(comm));
  Intervals both = Intersect(compute, comm);
  Intervals any = compute;
  any.insert(any.end(), comm.begin(), comm.end());
  any = Union(std::move(any));
  std::vector<CommBreakdown> out;
  for (const Step& st : s.steps) {
    int64_t k = LengthWithin(compute, st.begin_ns, st.end_ns);
    int64_t c = LengthWithin(comm, st.begin_ns, st.end_ns);
    int64_t o = LengthWithin(both, st.begin_ns, st.end_ns);
    int64_t a = LengthWithin(any, st.begin_ns, st.end_ns);
    out.push_back({k - o, o, c - o, st.dur_ns() - a});
  }
  return out;
}

namespace {

// Collectives the model took part in.
int64_t CollectivesOf(size_t model, const CollectivesResult& c) {
  int64_t n = 0;
  for (const Collective& x : c.collectives)
    n += std::ranges::any_of(x.ops, [&](const CommOp& op) { return op.model == model; });
  return n;
}

std::string StragglerAdvice(const std::string& cause) {
  if (cause == "compute")
    return "Check that rank's GPU (nvidia-smi -q -d CLOCK,PERFORMANCE,TEMPERATURE: clocks, "
           "throttling, another process) when its kernels run longer per call; balance the work "
           "across ranks when it runs more of them.";
  if (cause == "data_loader")
    return "Give that rank's DataLoader more workers, pinned memory or faster storage, and "
           "check its host's CPU load.";
  if (cause == "host")
    return "Look at that rank's host before its collectives: CPU contention, Python work or a "
           "synchronisation (record with_stack=True on that rank).";
  return "Look at what differs on that rank before its collectives: its data loading, its GPU "
         "(clocks, another process) or more work (uneven batches or sequence lengths).";
}

}  // namespace

std::vector<Candidate> StragglerCandidates(const std::vector<RankInfo>& models,
                                           const std::vector<RankAnalysis>& an,
                                           const CollectivesResult& c, const CrossRankPath& path) {
  std::vector<LateRank> late = LateRanks(models.size(), c);
  auto [steps, median_step] = MedianSteps(an);
  if (median_step <= 0 || MatchDoubtful(c)) return {};
  std::vector<size_t> slow;
  for (size_t i = 0; i < late.size(); ++i)
    if (100 * late[i].per_other_ns / steps / median_step >= kStragglerWaitPct) slow.push_back(i);
  if (slow.empty()) return {};
  std::sort(slow.begin(), slow.end(),
            [&](size_t a, size_t b) { return late[a].per_other_ns > late[b].per_other_ns; });
  const size_t top = slow.front();
  const LateRank& l = late[top];
  double per_step = l.per_other_ns / steps;
  std::string names;
  for (size_t i : slow) names += fmt::format("{}{}", names.empty() ? "" : ", ", models[i].rank);
  const int64_t took_part = std::max<int64_t>(1, CollectivesOf(top, c));
  const CulpritCause why = ExplainCulprit(models, an, top);
  Candidate cand;
  cand.key = RuleKey("straggler").key();
  cand.rank = models[top].rank;
  cand.root_cause = true;
  cand.saves_ns = per_step;
  cand.figure = 100 * per_step / median_step;
  cand.headline = fmt::format(
      "{} {} the straggler: rank {} arrives last at {:.0f}% of its collectives ({}), and the "
      "others wait for it {{fig}} of the median step (threshold {}%)",
      slow.size() > 1 ? "ranks" : "rank", names + (slow.size() > 1 ? " are" : " is"),
      models[top].rank, 100.0 * static_cast<double>(l.late_at) / static_cast<double>(took_part),
      Types(l.types), kStragglerWaitPct);
  cand.detail = fmt::format("{:.3f} ms a step against a {:.3f} ms step; {}", Ms(per_step),
                            Ms(median_step), why.text);
  if (path.length_ns() > 0)
    cand.detail += fmt::format(" {:.0f}% of the critical path across ranks runs on it.",
                               100 * path.ShareOf(top));
  cand.advice = StragglerAdvice(why.kind);
  return {cand};
}

Victims::Victims(const std::vector<RankInfo>& models, const std::vector<RankAnalysis>& an,
                 const CollectivesResult& c, int64_t culprit)
    : culprit_(culprit) {
  for (size_t i = 0; i < models.size(); ++i)
    step_.emplace(models[i].rank, an[i].overview.avg_total_ns);
  for (const Collective& x : c.collectives)
    for (size_t i = 0; i < x.ops.size(); ++i) {
      const size_t m = x.ops[i].model;
      const double steps = std::max<double>(1, an[m].overview.steps.size());
      wait_[models[m].rank] += static_cast<double>(x.wait_ns(i)) / steps;
    }
}

void Victims::Name(Candidate& k) const {
  if (k.key != "communication" || k.rank == culprit_) return;
  auto wait = wait_.find(k.rank);
  const double waited = wait == wait_.end() ? 0 : wait->second;
  if (100 * waited < kStragglerWaitPct * step_.at(k.rank)) return;
  k.key = RuleKey("waits_for_straggler").key();
  k.root_cause = false;
  k.headline = fmt::format(
      "{{fig}} of the step time is communication not hidden behind computation, much of it "
      "waiting in collectives for rank {}, the straggler: these ranks wait, they are not slow",
      culprit_);
  k.detail = fmt::format("{:.3f} ms a step, {:.3f} ms of it waiting", Ms(k.saves_ns), Ms(waited));
  k.advice = fmt::format(
      "Fix rank {} (above): its late arrival is this wait. Overlapping communication would only "
      "hide it.",
      culprit_);
  k.saves_ns = 0;
}

}  // namespace trainprof::analysis
