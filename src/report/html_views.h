// Which charts report.html draws for a section, chosen from its tables by their ids (the views
// of issue 8: throughput over time, data-loader wait per step, memory timeline with its peak,
// system metrics over time, step-time breakdown per step, kernel-type and category breakdowns,
// ranks with the straggler). A series table no view knows gets a generic line chart, so every
// new section has a view from its first day. Internal to report/html.cc.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "report/report.h"

namespace trainprof::report::html {

struct Chart {
  std::string title;
  std::string svg;
};

// Every chart for `s`, in the order they are shown.
std::vector<Chart> SectionCharts(const Section& s);

// Rows of `t` to highlight (the straggler in a rank table); empty for most tables.
std::set<size_t> HighlightedRows(const Section& s, const Table& t);

}  // namespace trainprof::report::html
