// One output of a run folder, as the list in run_writers.h holds it: what it is called, when it
// runs, whether the options enable it and how it writes. An exporter (mlflow_export.h,
// tensorboard_export.h) implements this and is one line in run_writers.cc's list; it includes
// this header, never the list's.
#pragma once

#include <string>
#include <vector>

#include "report/report.h"
#include "trainprof/options.h"
#include "trainprof/status.h"

namespace trainprof::report {

// The run being written, as every writer sees it.
struct RunFiles {
  const Report& report;
  const std::string& dir;         // the run folder
  const Options::Output& output;  // which outputs are on, and where exporters write
  const std::string& summary;     // the terminal text
  bool replace = false;           // exporters: a run already exported is written again
};

// When a writer runs: kMain on the calling thread, kSide each on a thread of its own beside it
// (a report of 1,000 ranks takes seconds of number formatting; the CSV files waited for
// report.json when the side writers shared a thread), kExport after every file of the folder is
// written (exporters copy them).
enum class WritePhase { kMain, kSide, kExport };

// An output.* key an exporter reads, and the field it sets.
struct ExportKey {
  const char* key;                      // "output.mlflow"
  std::string Options::Output::*field;  // &Options::Output::mlflow
};

struct RunWriter {
  const char* what;  // "report.json", "MLflow store": names the output in errors
  WritePhase phase;
  // Whether the options enable it; null for an exporter: its first key is not empty.
  bool (*enabled)(const Options::Output& o);
  Status (*write)(const RunFiles& f);
  // An exporter's keys, the one that turns it on (its destination) first: declared here once,
  // they become `trainprof export`'s flags, the keys a rank's own run leaves off and Python's.
  std::vector<ExportKey> keys = {};
};

}  // namespace trainprof::report
