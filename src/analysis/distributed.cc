#include "analysis/distributed.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "analysis/culprit.h"
#include "analysis/intervals.h"
#include "analysis/sections/sections.h"
#include "base/stats.h"

namespace trainprof::analysis {

using report::Unit;
using report::Value;

namespace {

// What each rank cost the others at the collectives where it arrived last.
struct LateRank {
  int64_t late_at = 0;                   // collectives where it was last
  int64_t caused_ns = 0;                 // the sum of the other ranks' waits there
  double per_other_ns = 0;               // the same, per waiting rank
  std::map<std::string, int64_t> types;  // collective type -> times it was last
};

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

void AddStepTable(const AnalyzeInput& in, report::Section& s) {
  report::Table& t = AddRankTable(
      s, in, "distributed_step_breakdown", "Computation and communication per step",
      {{"rank", "Rank", Unit::kText},
       {"step", "Step", Unit::kText},
       {"step_time_s", "Step time", Unit::kSeconds},
       {"computation_s", "Computation", Unit::kSeconds},
       {"overlap_s", "Overlapping", Unit::kSeconds},
       {"communication_s", "Communication", Unit::kSeconds},
       {"other_s", "Other", Unit::kSeconds}},
      report::TableKind::kTable,
      [](const RankAnalysis& a, const std::string& rank, std::vector<std::vector<Value>>& rows) {
        const std::vector<CommBreakdown>& b = a.comm_breakdowns;
        for (size_t k = 0; k < b.size(); ++k) {
          const Step& st = a.steps.steps[k];
          rows.push_back({rank, st.name, Seconds(st.dur_ns()), Seconds(b[k].computation_ns),
                          Seconds(b[k].overlap_ns), Seconds(b[k].communication_ns),
                          Seconds(b[k].other_ns)});
        }
      });
  if (t.rows.size() > 40) t.kind = report::TableKind::kDetail;
  size_t ranks_with_steps = 0;
  for (const RankAnalysis& a : in.analyses) ranks_with_steps += a.comm_breakdowns.empty() ? 0 : 1;
  if (!t.rows.empty()) {  // a stacked bar per step; "#12" for "ProfilerStep#12"
    t.charts.push_back({.kind = report::ChartKind::kBars,
                        .label = "step",
                        .values = {"computation_s", "overlap_s", "communication_s", "other_s"},
                        .limit = 0,
                        .horizontal = false,
                        .label_format = ranks_with_steps > 1 ? "r{rank} {step}" : "",
                        .label_trim = "ProfilerStep"});
  }
}

void AddCommOpTable(const std::vector<RankInfo>& models, const CollectivesResult& c,
                    report::Section& s) {
  struct Sum {
    int64_t calls = 0, bytes = 0, time = 0, transfer = 0, wait = 0;
    bool sized = false;
  };
  std::map<std::pair<size_t, std::string>, Sum> sums;
  for (const Collective& x : c.collectives)
    for (size_t i = 0; i < x.ops.size(); ++i) {
      Sum& u = sums[{x.ops[i].model, x.type.empty() ? "unknown" : x.type}];
      ++u.calls;
      u.bytes += std::max<int64_t>(x.bytes, 0);
      u.sized |= x.bytes >= 0;
      u.time += x.ops[i].dur_ns();
      u.transfer += x.transfer_ns;
      u.wait += x.wait_ns(i);
    }
  report::Table& t = s.AddTable("comm_ops", "Communication ops per rank",
                                {{"rank", "Rank", Unit::kText},
                                 {"collective", "Collective", Unit::kText},
                                 {"calls", "Calls", Unit::kCount},
                                 {"bytes", "Total size", Unit::kBytes},
                                 {"time_s", "Total time", Unit::kSeconds},
                                 {"transfer_s", "Transfer", Unit::kSeconds},
                                 {"wait_s", "Wait", Unit::kSeconds},
                                 {"wait_pct", "Wait %", Unit::kPercent}});
  for (const auto& [key, u] : sums)
    t.rows.push_back({fmt::format("{}", models[key.first].rank), key.second, u.calls,
                      u.sized ? Value(u.bytes) : Value(std::monostate{}), Seconds(u.time),
                      Seconds(u.transfer), Seconds(u.wait),
                      u.time > 0 ? 100.0 * static_cast<double>(u.wait) / u.time : 0.0});
  if (t.rows.size() > 40) t.kind = report::TableKind::kDetail;
}

void AddCollectiveTable(const std::vector<RankInfo>& models, const CollectivesResult& c,
                        report::Section& s) {
  report::Table& t = s.AddTable("collectives", "Collectives matched across ranks",
                                {{"group", "Group", Unit::kText},
                                 {"match", "Matched by", Unit::kText},
                                 {"collective", "Collective", Unit::kText},
                                 {"bytes", "Size", Unit::kBytes},
                                 {"ranks", "Ranks", Unit::kCount},
                                 {"transfer_s", "Transfer", Unit::kSeconds},
                                 {"max_wait_s", "Max wait", Unit::kSeconds},
                                 {"late_rank", "Last to arrive", Unit::kText},
                                 {"algbw", "algbw", Unit::kBytesPerSecond},
                                 {"busbw", "busbw", Unit::kBytesPerSecond},
                                 {"scope", "Scope", Unit::kText}});
  bool hosts = true;
  for (const auto& m : models) hosts &= !m.host_name.empty();
  for (const Collective& x : c.collectives) {
    int64_t max_wait = 0;
    for (size_t i = 0; i < x.ops.size(); ++i) max_wait = std::max(max_wait, x.wait_ns(i));
    Value bytes = x.bytes >= 0 ? Value(x.bytes) : Value(std::monostate{});
    Value alg = x.bytes > 0 ? Value(x.algbw()) : Value(std::monostate{});
    Value bus = x.bytes > 0 ? Value(x.busbw()) : Value(std::monostate{});
    t.rows.push_back({x.group, x.match, x.type, bytes, static_cast<int64_t>(x.ops.size()),
                      Seconds(x.transfer_ns), Seconds(max_wait),
                      fmt::format("{}", x.ops[x.late].rank), alg, bus,
                      std::string(!hosts         ? "unknown"
                                  : x.inter_node ? "inter-node"
                                                 : "intra-node")});
  }
  if (t.rows.size() > 40) t.kind = report::TableKind::kDetail;
  t.notes.push_back(
      "Transfer: the shortest duration across ranks (the last rank to arrive waits for nobody); "
      "wait: each rank's duration minus it. busbw = algbw x NCCL's factor (allreduce 2(n-1)/n; "
      "allgather, reducescatter, alltoall (n-1)/n; others 1): comparable with nccl-tests, but "
      "only an estimate of the link's speed when one algorithm and protocol ran.");
}

void AddOffsetTable(const CollectivesResult& c, report::Section& s) {
  report::Table& t = s.AddTable("clock_offsets", "Clock offsets (from collective ends)",
                                {{"rank", "Rank", Unit::kText},
                                 {"offset_s", "Offset", Unit::kSeconds},
                                 {"residual_rms_s", "Residual (RMS)", Unit::kSeconds},
                                 {"residual_max_s", "Residual (max)", Unit::kSeconds},
                                 {"samples", "Collectives", Unit::kCount}});
  double worst = 0;
  for (const ClockOffset& o : c.offsets) {
    t.rows.push_back({fmt::format("{}", o.rank), Seconds(o.offset_ns), Seconds(o.residual_rms_ns),
                      Seconds(o.residual_max_ns), o.samples});
    worst = std::max(worst, static_cast<double>(o.residual_max_ns));
  }
  if (t.rows.size() > 40) t.kind = report::TableKind::kDetail;
  s.AddMetric("max_clock_residual_s", "Largest clock-alignment residual", Seconds(worst),
              Unit::kSeconds);
}

void AddLateTable(const std::vector<RankInfo>& models, const std::vector<RankAnalysis>& an,
                  const CollectivesResult& c, report::Section& s) {
  std::vector<LateRank> late = LateRanks(models.size(), c);
  auto [steps, median_step] = MedianSteps(an);
  report::Table& t = s.AddTable("wait_by_late_rank", "Wait caused per rank (it arrived last)",
                                {{"rank", "Rank", Unit::kText},
                                 {"late_at", "Last at", Unit::kCount},
                                 {"caused_wait_s", "Others' wait", Unit::kSeconds},
                                 {"wait_per_step_s", "Wait per rank and step", Unit::kSeconds},
                                 {"wait_pct", "Of median step", Unit::kPercent},
                                 {"collectives", "Collectives", Unit::kText}});
  for (size_t i = 0; i < models.size(); ++i) {
    const LateRank& l = late[i];
    double per_step = l.per_other_ns / steps;
    t.rows.push_back({fmt::format("{}", models[i].rank), l.late_at, Seconds(l.caused_ns),
                      Seconds(per_step), median_step > 0 ? 100 * per_step / median_step : 0.0,
                      Types(l.types)});
  }
  if (t.rows.size() > 40) t.kind = report::TableKind::kDetail;
}

}  // namespace

// Collectives end together on every rank, so after the offsets their ends agree to within the
// clocks' drift. A residual larger than the median transfer means the kernels matched are not
// the same collectives (order of issue across different groups, or capture windows that differ).
bool MatchDoubtful(const CollectivesResult& c) {
  if (c.collectives.empty()) return false;
  std::vector<double> transfers;
  for (const Collective& x : c.collectives) transfers.push_back(static_cast<double>(x.transfer_ns));
  double residual = 0;
  for (const ClockOffset& o : c.offsets)
    residual = std::max(residual, static_cast<double>(o.residual_max_ns));
  return residual > base::Median(transfers);
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

void AddDistributedView(const AnalyzeInput& in, report::Report& r) {
  const std::vector<RankInfo>& models = in.ranks;
  const std::vector<RankAnalysis>& an = in.analyses;
  const CollectivesResult& c = in.collectives;
  if (models.size() < 2 || (c.collectives.empty() && c.unmatched == 0)) return;
  report::Section& s = r.AddSection("distributed", "Distributed view (ranks and collectives)");
  s.AddMetric("collectives", "Collectives matched across ranks",
              static_cast<int64_t>(c.collectives.size()), Unit::kCount);
  s.AddMetric("unmatched_comm_kernels", "Communication kernels seen on one rank only", c.unmatched,
              Unit::kCount);
  int64_t wait = 0, time = 0;
  for (const Collective& x : c.collectives)
    for (size_t i = 0; i < x.ops.size(); ++i) wait += x.wait_ns(i), time += x.ops[i].dur_ns();
  if (time > 0)
    s.AddMetric("comm_wait_pct", "Share of collective time spent waiting for other ranks",
                100.0 * static_cast<double>(wait) / static_cast<double>(time), Unit::kPercent);
  AddStepTable(in, s);
  AddCommOpTable(models, c, s);
  AddCollectiveTable(models, c, s);
  AddLateTable(models, an, c, s);
  AddOffsetTable(c, s);
  if (MatchDoubtful(c))
    s.notes.push_back(
        "The clock residual exceeds the median transfer: the kernels matched are probably not "
        "the same collectives on every rank (order of issue across groups, or capture windows "
        "that differ), so waits and the straggler are not reported as findings.");
  if (!c.collectives.empty())
    s.notes.push_back(c.by_sequence
                          ? "Collectives matched by process group and sequence number."
                          : "The traces carry no sequence numbers: collectives matched by their "
                            "order of issue within each process group.");
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
  cand.key = "straggler";
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

void NameVictims(const std::vector<RankInfo>& models, const std::vector<RankAnalysis>& an,
                 const CollectivesResult& c, int64_t culprit, std::vector<Candidate>* all) {
  std::map<int64_t, double> wait;   // rank -> its waits in collectives, per step
  std::map<int64_t, size_t> index;  // rank -> its model
  for (size_t i = 0; i < models.size(); ++i) index.emplace(models[i].rank, i);
  for (const Collective& x : c.collectives)
    for (size_t i = 0; i < x.ops.size(); ++i) {
      const size_t m = x.ops[i].model;
      const double steps = std::max<double>(1, an[m].overview.steps.size());
      wait[models[m].rank] += static_cast<double>(x.wait_ns(i)) / steps;
    }
  for (Candidate& k : *all) {
    if (k.key != "communication" || k.rank == culprit) continue;
    const double step = an[index.at(k.rank)].overview.avg_total_ns;
    if (100 * wait[k.rank] < kStragglerWaitPct * step) continue;
    k.key = "waits_for_straggler";
    k.root_cause = false;
    k.headline = fmt::format(
        "{{fig}} of the step time is communication not hidden behind computation, much of it "
        "waiting in collectives for rank {}, the straggler: these ranks wait, they are not slow",
        culprit);
    k.detail =
        fmt::format("{:.3f} ms a step, {:.3f} ms of it waiting", Ms(k.saves_ns), Ms(wait[k.rank]));
    k.advice = fmt::format(
        "Fix rank {} (above): its late arrival is this wait. Overlapping communication would only "
        "hide it.",
        culprit);
    k.saves_ns = 0;
  }
}

}  // namespace trainprof::analysis
