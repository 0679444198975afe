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

namespace trainprof::analysis {

// A window that cannot be analysed (no such annotation, a graph with a cycle) is a note in the
// section, not an error.
void AddCriticalPathSection(const std::vector<trace::TraceModel>& models,
                            const std::vector<RankAnalysis>& an, const std::string& spec,
                            report::Report& r);

}  // namespace trainprof::analysis
