// The "critical_path" section of `trainprof analyze --critical-path
// [ANNOTATION[:INSTANCE[-LAST]]]`: HTA's critical path (critical_path.h) of each rank over each
// analysed step (no annotation) or over the INSTANCE-th range (from 0) whose name contains
// ANNOTATION ("" or ":0": the whole trace).
//
//   a.critical_paths = RankCriticalPaths(model, a, "");         // every analysed step
//   a.critical_paths = RankCriticalPaths(model, a, "forward:1");  // the second "forward"
//   AddCriticalPathSection(ranks, analyses, report);
#pragma once

#include <string>
#include <vector>

#include "analysis/rank_analysis.h"
#include "analysis/ranks/critical_path.h"
#include "report/report.h"
#include "trace/chrome_trace_writer.h"

namespace trainprof::analysis {

// One rank's windows, each with its path or, when it cannot be analysed (no such annotation, a
// graph with a cycle), a note for the section instead of an error.
std::vector<CpWindow> RankCriticalPaths(const trace::TraceModel& m, const RankAnalysis& a,
                                        const std::string& spec, const CpOptions& o = {});

// The section from the ranks' RankAnalysis::critical_paths.
void AddCriticalPathSection(const std::vector<RankInfo>& ranks, const std::vector<RankAnalysis>& an,
                            report::Report& r);

// The same windows' paths as a Chrome trace for Perfetto, into `w` (opened and closed by the
// caller): per rank and window a process "rank N critical path: WINDOW" with a track of the
// path's edges (each named after the event its time is attributed to, its category as "cat")
// and the events on the path, CPU ones on one track and GPU work on one track per stream.
// `offsets_ns[i]` (the clock offsets of collectives.h; empty: none) is taken from rank i's
// times, so the ranks' paths line up on the first rank's clock.
void WriteCriticalPathTrace(const std::vector<RankInfo>& ranks, const std::vector<RankAnalysis>& an,
                            const std::vector<int64_t>& offsets_ns, trace::ChromeTraceWriter& w);

}  // namespace trainprof::analysis
