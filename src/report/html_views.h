// Which charts report.html draws for a section: the ones its tables' builders asked for
// (Table::charts, report.h's ChartHint), drawn without knowing any table by its id. A series
// table no builder asked a chart of gets a generic line chart, so every new section has a view
// from its first day. Internal to report/html.cc.
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

// Rows of `t` its chart hints highlight (the straggler in a rank table); empty for most tables.
std::set<size_t> HighlightedRows(const Table& t);

}  // namespace trainprof::report::html
