#include "analysis/ranks/cross_rank_path.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "analysis/intervals.h"
#include "analysis/phase_view.h"
#include "analysis/units.h"

namespace trainprof::analysis {

using report::Unit;

namespace {

// The length of a rank's busy intervals before each moment, by binary search over prefix sums.
class Cumulative {
 public:
  explicit Cumulative(Intervals v) : v_(std::move(v)), before_(v_.size() + 1, 0) {
    for (size_t i = 0; i < v_.size(); ++i) before_[i + 1] = before_[i] + v_[i].end - v_[i].begin;
  }
  int64_t At(int64_t t) const {
    auto it = std::upper_bound(v_.begin(), v_.end(), t,
                               [](int64_t x, const Interval& i) { return x < i.begin; });
    const size_t k = static_cast<size_t>(it - v_.begin());
    if (k == 0) return 0;
    return before_[k - 1] + std::min(t, v_[k - 1].end) - v_[k - 1].begin;
  }

 private:
  Intervals v_;
  std::vector<int64_t> before_;
};

// A CPU op or annotation named as a data-loader range, not a step itself.
bool IsLoaderRange(const trace::TraceModel& m, size_t i, const AnalyzeOptions& o) {
  return IsDataLoaderName(m.name_of(i), o.dataloader_patterns) &&
         StepNumber(m.name_of(i), o.steps_from, 0) < 0;
}

struct RankClock {
  bool in_window = false;
  int64_t offset_ns = 0, begin_ns = 0, end_ns = 0;  // the window, on the reference clock
};

// One of a rank's collective ends, on the reference clock.
struct End {
  int64_t end_ns = 0;
  size_t collective = 0, op = 0;
};

class PathWalk {
 public:
  PathWalk(const std::vector<RankAnalysis>& an, const CollectivesResult& c) : an_(an), c_(c) {}

  // Why the path cannot be walked, or "".
  std::string Prepare(const std::vector<RankInfo>& ranks);
  CrossRankPath Walk();

 private:
  void AddWork(size_t model, int64_t from, int64_t to, const PathMark& a, const PathMark& b);
  const std::vector<RankAnalysis>& an_;
  const CollectivesResult& c_;
  std::vector<RankClock> clocks_;
  std::vector<std::vector<End>> ends_;  // per rank, by end
  CrossRankPath p_;
};

std::string PathWalk::Prepare(const std::vector<RankInfo>& ranks) {
  if (ranks.size() < 2 || c_.collectives.empty()) return "No collectives matched across ranks.";
  if (MatchDoubtful(c_))
    return "The collectives matched are in doubt (clock residual above the median transfer).";
  clocks_.resize(ranks.size());
  ends_.resize(ranks.size());
  for (size_t k = 0; k < c_.offsets.size() && k < clocks_.size(); ++k)
    clocks_[k].offset_ns = c_.offsets[k].offset_ns;
  for (size_t x = 0; x < c_.collectives.size(); ++x)
    for (size_t k = 0; k < c_.collectives[x].ops.size(); ++k) {
      const CommOp& op = c_.collectives[x].ops[k];
      ends_[op.model].push_back({op.end_ns - clocks_[op.model].offset_ns, x, k});
    }
  bool any = false;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ends_[i].empty()) continue;
    const std::vector<Step>& st = an_[i].steps.steps;
    // A rank without steps (a file cut short) stays out: the path stops where it reaches it.
    if (st.empty() || an_[i].step_marks.size() != st.size()) continue;
    any = true;
    std::ranges::sort(ends_[i], {}, &End::end_ns);
    RankClock& r = clocks_[i];
    r.in_window = true;
    r.begin_ns = st.front().begin_ns - r.offset_ns;
    r.end_ns = st.back().end_ns - r.offset_ns;
  }
  return any ? "" : "No rank that ran collectives has analysed steps.";
}

void PathWalk::AddWork(size_t model, int64_t from, int64_t to, const PathMark& a,
                       const PathMark& b) {
  if (to <= from) return;
  PathSegment s{model, from, to};
  const int64_t len = to - from;
  const int64_t compute = std::clamp(b.compute_ns - a.compute_ns, int64_t{0}, len);
  const int64_t data = std::clamp(b.data_ns - a.data_ns, int64_t{0}, len - compute);
  s.ns = {compute, data, len - compute - data, 0};
  p_.segments.push_back(s);
}

// Back from the end of the last rank to finish: on a rank, back to the latest end of one of its
// collectives; then to that collective's last arrival, on the rank that arrived last. Every
// move goes to an earlier collective end, so the walk ends.
CrossRankPath PathWalk::Walk() {
  size_t cur = 0;
  for (size_t i = 0; i < clocks_.size(); ++i)
    if (clocks_[i].in_window &&
        (!clocks_[cur].in_window || clocks_[i].end_ns > clocks_[cur].end_ns))
      cur = i;
  int64_t t = clocks_[cur].end_ns;
  PathMark mark = an_[cur].step_marks.back().end;
  p_.end_ns = t;
  p_.steps = static_cast<int64_t>(an_[cur].steps.steps.size());
  while (true) {
    const RankClock& clock = clocks_[cur];
    const std::vector<End>& ends = ends_[cur];
    auto it = std::ranges::lower_bound(ends, t, {}, &End::end_ns);
    if (it == ends.begin() || std::prev(it)->end_ns <= clock.begin_ns) {
      AddWork(cur, clock.begin_ns, t, an_[cur].step_marks.front().begin, mark);
      p_.begin_ns = std::min(t, clock.begin_ns);
      break;
    }
    const End& e = *std::prev(it);
    const Collective& x = c_.collectives[e.collective];
    AddWork(cur, e.end_ns, t, an_[cur].comm_ops[x.ops[e.op].event].at_end, mark);
    const CommOp& last = x.ops[x.late];
    const int64_t arrival = std::min(last.start_ns - clocks_[last.model].offset_ns, e.end_ns);
    PathSegment transfer{last.model, arrival, e.end_ns, static_cast<int64_t>(e.collective)};
    transfer.ns[static_cast<int>(PathCategory::kCommunication)] = e.end_ns - arrival;
    if (e.end_ns > arrival) p_.segments.push_back(transfer);
    cur = last.model;
    t = arrival;
    mark = an_[cur].comm_ops[last.event].at_start;
    if (!clocks_[cur].in_window || t <= clocks_[cur].begin_ns) {
      p_.begin_ns = t;
      break;
    }
  }
  std::ranges::reverse(p_.segments);
  return std::move(p_);
}

}  // namespace

const char* PathCategoryName(PathCategory c) { return kPathCategoryNames[static_cast<int>(c)]; }

int64_t CrossRankPath::jumps() const {
  int64_t n = 0;
  for (size_t i = 1; i < segments.size(); ++i) n += segments[i].model != segments[i - 1].model;
  return n;
}

double CrossRankPath::ShareOf(size_t model) const {
  int64_t on = 0;
  for (const PathSegment& s : segments)
    if (s.model == model) on += s.end_ns - s.begin_ns;
  return length_ns() > 0 ? static_cast<double>(on) / static_cast<double>(length_ns()) : 0;
}

void MarkPath(const trace::TraceModel& m, const AnalyzeOptions& o, RankAnalysis& a) {
  const std::vector<bool> is_comm = CommunicationNames(m);
  std::vector<int8_t> loader(m.names.size(), -1);  // per name: a data-loader range's
  Intervals compute, data;
  for (size_t i = 0; i < m.size(); ++i) {
    if (m.kind[i] == trace::EventKind::kKernel) {
      if (!is_comm[m.name[i]]) AppendForUnion(compute, {m.ts_ns[i], m.end_ns(i)});
      continue;
    }
    const trace::EventKind k = m.kind[i];
    if (k != trace::EventKind::kCpuOp && k != trace::EventKind::kUserAnnotation) continue;
    int8_t& l = loader[m.name[i]];
    if (l < 0) l = IsLoaderRange(m, i, o) ? 1 : 0;
    if (l == 1) AppendForUnion(data, {m.ts_ns[i], m.end_ns(i)});
  }
  compute = Union(std::move(compute));
  const Cumulative gpu(compute), loading(Subtract(Union(std::move(data)), compute));
  auto mark = [&](int64_t t) { return PathMark{gpu.At(t), loading.At(t)}; };
  for (RankCommOp& op : a.comm_ops) op.at_start = mark(op.start_ns), op.at_end = mark(op.end_ns);
  a.step_marks.clear();
  for (const Step& s : a.steps.steps) a.step_marks.push_back({mark(s.begin_ns), mark(s.end_ns)});
}

CrossRankPath ComputeCrossRankPath(const std::vector<RankInfo>& ranks,
                                   const std::vector<RankAnalysis>& an,
                                   const CollectivesResult& c) {
  PathWalk walk(an, c);
  std::string why = walk.Prepare(ranks);
  if (!why.empty()) return {.note = why};
  return walk.Walk();
}

std::shared_ptr<const RanksMatched> MatchRanks(const std::vector<RankInfo>& ranks,
                                               const std::vector<RankAnalysis>& an) {
  auto m = std::make_shared<RanksMatched>();
  CommOpsOf of;
  for (const RankAnalysis& a : an) of.push_back({&a.comm_ops, &a.comm_names});
  m->collectives = MatchCollectives(ranks, of);
  m->path = ComputeCrossRankPath(ranks, an, m->collectives);
  return m;
}

namespace {

// The segment's name on the timeline: its collective, else what dominates its time.
std::string SegmentName(const PathSegment& s, const CollectivesResult& c) {
  if (s.collective >= 0) {
    const Collective& x = c.collectives[static_cast<size_t>(s.collective)];
    return fmt::format("{} {}{}", x.type.empty() ? "collective" : x.type, x.group,
                       x.group.empty() ? "" : " " + x.match);
  }
  const auto top = std::ranges::max_element(s.ns);
  return kPathCategoryNames[static_cast<size_t>(top - s.ns.begin())];
}

std::string SegmentArgs(const PathSegment& s) {
  std::string out;
  for (int k = 0; k < kNumPathCategories; ++k)
    out += fmt::format("{}\"{}_ms\":{:.3f}", k ? "," : "", kPathCategoryNames[k], Ms(s.ns[k]));
  return out;
}

}  // namespace

void WriteCrossRankPathTrace(const std::vector<RankInfo>& ranks, const CollectivesResult& c,
                             const CrossRankPath& p, trace::ChromeTraceWriter& w) {
  constexpr int64_t kPid = 1;
  w.ProcessName(kPid, "critical path across ranks");
  std::vector<bool> named(ranks.size(), false);
  uint64_t flow = 0;
  for (size_t i = 0; i < p.segments.size(); ++i) {
    const PathSegment& s = p.segments[i];
    const int64_t tid = ranks[s.model].rank;
    if (!named[s.model]) w.ThreadName(kPid, tid, fmt::format("rank {}", tid));
    named[s.model] = true;
    const std::string cat = s.collective >= 0 ? "communication" : "work";
    w.Complete(w.InternName(SegmentName(s, c)), cat, s.begin_ns, s.end_ns - s.begin_ns, kPid, tid,
               -1, SegmentArgs(s));
    if (i == 0 || p.segments[i - 1].model == s.model) continue;
    w.Flow(++flow, s.begin_ns, kPid, ranks[p.segments[i - 1].model].rank, true);
    w.Flow(flow, s.begin_ns, kPid, tid, false);
  }
  w.OtherData("trainprof", "critical path across ranks, on the first rank's clock");
}

}  // namespace trainprof::analysis
