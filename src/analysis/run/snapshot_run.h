// A PyTorch memory snapshot as an input of the driver (driver.h): its report, and the snapshot
// options an analyze request stands for, which `trainprof diff a.pickle b.pickle` uses too.
//
//   StatusOr<report::Report> r = SnapshotReport("memory.pickle", request);
#pragma once

#include <string>

#include "analysis/run/request.h"
#include "report/report.h"
#include "snapshot/snapshot_analysis.h"
#include "trainprof/status.h"

namespace trainprof::analysis {

// The window r.from_s..r.to_s (seconds; NaN: open) in the snapshot's µs, and r.top_kernels rows
// per table.
snapshot::SnapshotOptions SnapshotOptionsOf(const AnalyzeRequest& r);

// The report of a PyTorch memory snapshot pickle, as `trainprof analyze x.pickle` writes it: its
// memory sections. Errors: the snapshot reader's one line, naming the file.
StatusOr<report::Report> SnapshotReport(const std::string& path, const AnalyzeRequest& r);

// `trainprof diff a.pickle b.pickle` (the CLI and MCP's diff): the memory diff of two snapshots,
// r.top_kernels rows a table. Errors: a side that is not a snapshot (naming it), or the
// snapshot reader's one line.
StatusOr<report::Report> SnapshotDiffReport(const std::string& a, const std::string& b,
                                            const AnalyzeRequest& r);

}  // namespace trainprof::analysis
