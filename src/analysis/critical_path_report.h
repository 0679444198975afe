// The "critical_path" section of `trainprof analyze --critical-path [ANNOTATION[:INSTANCE]]`:
// HTA's critical path (critical_path.h) of each rank over each analysed step (no annotation) or
// over the INSTANCE-th range (from 0) whose name contains ANNOTATION.
//
//   AddCriticalPathSection(models, analyses, "", report);             // every analysed step
//   AddCriticalPathSection(models, analyses, "forward:1", report);    // the second "forward"
#pragma once

#include <string>
#include <vector>

#include "analysis/analyze.h"
#include "report/report.h"
#include "trace/chrome_trace_writer.h"

namespace trainprof::analysis {

// A window that cannot be analysed (no such annotation, a graph with a cycle) is a note in the
// section, not an error.
void AddCriticalPathSection(const std::vector<trace::TraceModel>& models,
                            const std::vector<RankAnalysis>& an, const std::string& spec,
                            report::Report& r);

// The same windows' paths as a Chrome trace for Perfetto, into `w` (opened and closed by the
// caller): per rank and window a process "rank N critical path: WINDOW" with a track of the
// path's edges (each named after the event its time is attributed to, its category as "cat")
// and the events on the path, CPU ones on one track and GPU work on one track per stream.
void WriteCriticalPathTrace(const std::vector<trace::TraceModel>& models,
                            const std::vector<RankAnalysis>& an, const std::string& spec,
                            trace::ChromeTraceWriter& w);

}  // namespace trainprof::analysis
