// report.json: the canonical, complete form of a Report (every section, every table and series,
// schema_version, config, metadata, diagnostics). Other tools read this file.
//
//   std::string text = report::RenderJsonString(report);
//
// Layout (schema_version 2):
//   {"schema_version": 2, "kind": "profile", "title": "...",
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
// Empty values are null; dotted meta and config keys are nested objects. Version 2 (the layout is
// version 1's, and version 1 files are read): the torch reports' "operators" section is PyTorch's
// key_averages table (with activation_memory and memory_events, which only the C++ job's
// observer knows); its other memory tables (peak_allocated_* metrics, memory_at_peak,
// memory_timeline) are the "memory" section's, analyze's Memory view of the same recording
// (memory_peaks, memory_live_at_peak, memory_curve_r0_*).
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
