// The critical path across ranks: HTA's question ("what, if it were faster, would make the step
// shorter?") asked of the whole job, Scalasca's way. A collective ends when its last rank
// arrives, so the path, walked back from the end of the last rank to finish, runs on one rank
// until it reaches the end of a collective, then jumps to the collective's last arriver at its
// arrival, and so on back to the start of the analysed steps. Between two collectives a rank's
// time is split by what its GPU and host did (its PathMarks, computed while its model lived), so
// only compact records cross ranks, at any scale. docs/trace-analysis.md ("Critical path across
// ranks") defines each figure and what this model leaves out.
//
//   MarkPath(model, options, analysis);  // per rank, with its model
//   CrossRankPath p = ComputeCrossRankPath(ranks, analyses, collectives);
//   for (const PathSegment& s : p.segments) use(s.model, s.begin_ns, s.end_ns);
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "analysis/rank_analysis.h"
#include "analysis/ranks/collectives.h"
#include "report/report.h"
#include "trace/chrome_trace_writer.h"

namespace trainprof::analysis {

// Per rank: each communication kernel's and each analysed step's PathMarks (rank_parts.h).
void MarkPath(const trace::TraceModel& m, const AnalyzeOptions& o, RankAnalysis& a);

// What the path's time is spent on.
enum class PathCategory : uint8_t { kCompute, kDataLoader, kHost, kCommunication };
inline constexpr int kNumPathCategories = 4;
// The categories' names, in PathSegment::ns's order.
inline constexpr std::array<const char*, kNumPathCategories> kPathCategoryNames = {
    "compute", "data_loader", "host", "communication"};
const char* PathCategoryName(PathCategory c);  // "compute", "data_loader", "host", ...

// A stretch of the path on one rank: its own work between two collectives (`collective` -1), or
// a collective's transfer after its last arrival (`collective`: index into the matched ones).
// Times are on the reference rank's clock (the clock offsets applied).
struct PathSegment {
  size_t model = 0;  // index into the ranks
  int64_t begin_ns = 0, end_ns = 0;
  int64_t collective = -1;
  std::array<int64_t, kNumPathCategories> ns{};  // sums to end - begin
};

struct CrossRankPath {
  std::string note;  // why there is no path ("" when there is one)
  int64_t begin_ns = 0, end_ns = 0;
  int64_t steps = 0;                  // the analysed steps of the rank the path ends on
  std::vector<PathSegment> segments;  // in time order
  int64_t length_ns() const { return end_ns - begin_ns; }
  int64_t jumps() const;               // times the path moves to another rank
  double ShareOf(size_t model) const;  // of the length, on that rank (0 to 1)
};

// Errors: none; without two ranks of matched collectives, trustworthy clock offsets and a rank
// with analysed steps, `note` says which is missing. A rank without steps is left out: the path
// starts where it reaches that rank.
CrossRankPath ComputeCrossRankPath(const std::vector<RankInfo>& ranks,
                                   const std::vector<RankAnalysis>& an, const CollectivesResult& c);

// The collectives matched across ranks and the path walked on them: made once a report (the
// most memory a report of many ranks takes after the ranks' own), read by its sections and by
// the files written with it (cross_rank_path.trace.json, critical_path.trace.json).
struct RanksMatched {
  CollectivesResult collectives;
  CrossRankPath path;
};
std::shared_ptr<const RanksMatched> MatchRanks(const std::vector<RankInfo>& ranks,
                                               const std::vector<RankAnalysis>& an);

// The path on one timeline for Perfetto: a track per rank it visits, a slice per segment named
// by what dominates it, arrows where it jumps between ranks.
void WriteCrossRankPathTrace(const std::vector<RankInfo>& ranks, const CollectivesResult& c,
                             const CrossRankPath& p, trace::ChromeTraceWriter& w);

}  // namespace trainprof::analysis
