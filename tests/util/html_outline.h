// The structure of a report.html page as JSON, for golden tests that must not depend on bytes:
//
//   {"kind": "analyze", "ready": "charts=4 tables=12", "errors": "",
//    "findings": {"error": 0, "warning": 4, "info": 0}, "external_references": 0,
//    "sections": [{"id": "overview", "metrics": 2,
//                  "charts": [{"id": "step_breakdown", "kind": "bar", "series": 8}],
//                  "tables": [{"id": "step_breakdown", "rows": 6, "highlighted": 0}]}]}
//
// Works on the file trainprof writes and on the DOM headless Chromium dumps after running the
// page's script ("ready" and "errors" come from attributes that script sets).
#pragma once

#include <string>

namespace trainprof::testutil {

std::string HtmlOutline(const std::string& html);

}  // namespace trainprof::testutil
