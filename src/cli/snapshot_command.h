// `trainprof analyze` and `trainprof diff` on PyTorch memory snapshots (pickles, told by their
// first byte, 0x80): one report per snapshot, and the diff of two.
#pragma once

#include <string>
#include <vector>

#include "cli/analyze_run.h"

namespace trainprof::cli {

// Analyses the snapshots of f.path: the file itself when it is a pickle, or the snapshot
// pickles (*.pickle, *.pkl) below a folder, each with its own report. Returns true when the
// input holds nothing else to analyse (then *code is the exit code); false when traces remain
// (*code: the snapshots' worst exit code, kExitOk when there were none).
bool AnalyzeSnapshotInputs(const AnalyzeFlags& f, int* code);

// Both sides are snapshot pickles: true, and *code is the diff's exit code.
bool DiffSnapshotInputs(const AnalyzeFlags& f, const std::string& b_path, int* code);

// Writes the run folder and prints the report (analyze_command.cc).
int EmitReport(report::Report& r, const AnalyzeFlags& f, const Options::Output& out);

}  // namespace trainprof::cli
