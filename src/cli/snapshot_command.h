// `trainprof analyze` on PyTorch memory snapshots (pickles, told by their first byte, 0x80): one
// report per snapshot (the diff of two is the driver's DiffRun).
#pragma once

#include <string>
#include <vector>

#include "cli/analyze_run.h"

namespace trainprof::cli {

// One report per memory snapshot (a pickle or a memory timeline, told by its bytes), each in
// its own run folder (RUN_DIR/snapshotK with several); the worst exit code.
int AnalyzeSnapshots(const std::vector<std::string>& files, const AnalyzeFlags& f);

// Writes the run folder and prints the report (analyze_command.cc).
int EmitReport(report::Report& r, const AnalyzeFlags& f, const Options::Output& out);

}  // namespace trainprof::cli
