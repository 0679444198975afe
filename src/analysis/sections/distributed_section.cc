// The "distributed" section (the TensorBoard plugin's distributed view): per rank and step
// computation, overlap, communication and other time; a communication-op table per rank; the
// collectives matched across ranks with wait, transfer, algbw and busbw; the ranks that arrived
// last; the clock offsets between ranks (distributed.h computes what it shows).
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "analysis/ranks/distributed.h"
#include "analysis/sections/sections.h"
#include "base/stats.h"

namespace trainprof::analysis {

using report::Unit;
using report::Value;

namespace {

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
          rows.push_back(report::MakeRow(rank, st.name, Seconds(st.dur_ns()),
                                         Seconds(b[k].computation_ns), Seconds(b[k].overlap_ns),
                                         Seconds(b[k].communication_ns), Seconds(b[k].other_ns)));
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

}  // namespace trainprof::analysis
