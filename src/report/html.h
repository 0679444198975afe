// report.html: one self-contained page per run folder. Every section of the Report, findings and
// recommendations first, headline figures as cards, charts drawn as inline SVG (report/svg.h),
// tables sortable by a click on their header; CSS and the ~40 lines of script are inline, so the
// page needs no network, opens from disk and prints.
//
//   report::HtmlRenderer().Render(report, out);   // or report::RenderHtmlString(report)
//
// Structure the tests rely on (not the bytes): <section class="report-section" data-section=ID>,
// <svg class="chart" data-chart=ID>, <table class="data" data-table=ID data-rows=N>, and the
// <html> element's data-ready="charts=N tables=M" set by the script once the page has loaded
// (data-errors collects any script error).
#pragma once

#include <string>

#include "report/renderer.h"

namespace trainprof::report {

class HtmlRenderer : public Renderer {
 public:
  void Render(const Report& report, std::ostream& out) const override;
};

std::string RenderHtmlString(const Report& report);
// report.html's stylesheet, for other pages in the same style (the live page).
const char* ReportStyle();

// Rows of a table written into the page (all rows stay in its CSV and report.json): a 1,000-rank
// job's per-step tables hold 49,000 rows, which made a 130 MB page no browser opens quickly.
inline constexpr size_t kHtmlRowLimit = 1000;

}  // namespace trainprof::report
