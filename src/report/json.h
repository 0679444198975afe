// report.json: the canonical, complete form of a Report (every section, every table and series,
// schema_version, config, metadata, diagnostics). Other tools read this file.
//
//   std::string text = report::RenderJsonString(report);
//
// Layout (schema_version 1):
//   {"schema_version": 1, "kind": "profile", "title": "...",
//    "meta": {"trainprof_version": "...", "created_utc": "...", "host": {"name": ...}, ...},
//    "config": {"time": {"enabled": true, ...}, ...},
//    "sections": [{"id": "time", "title": "...", "notes": [...],
//                  "findings": [{"severity": "warning", "text": ...,
//                                "rule": "dataloader", "ranks": [0], "saves_s": 0.012}],
//                  "metrics": {"wall_time_s": {"title": ..., "value": 1.5, "unit": "seconds"}},
//                  "tables": [{"id": "time_report", "title": ..., "kind": "table" | "series",
//                              "columns": [{"key": ..., "title": ..., "unit": ...}],
//                              "rows": [{"<key>": value, ...}], "footer": [...],
//                              "notes": [...]}]}],
//    "diagnostics": [{"severity": "warning", "name": ..., "count": 3, "message": ...}]}
// Empty values are null; dotted meta and config keys are nested objects.
#pragma once

#include <string>

#include "report/renderer.h"

namespace trainprof::report {

class JsonRenderer : public Renderer {
 public:
  void Render(const Report& report, std::ostream& out) const override;
};

std::string RenderJsonString(const Report& report);

}  // namespace trainprof::report
