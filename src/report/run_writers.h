// What a run folder gets, as one list: the terminal text (summary.txt), report.json, one CSV per
// table, report.html, the files only the caller can write (trace.json,
// critical_path.trace.json), then the exporters that copy the run elsewhere (an MLflow store, a
// TensorBoard log dir). Each entry is enabled by Options::Output; a new output is one file with
// its function and one line in kRunWriters (run_writers.cc), where an exporter also declares its
// output.* keys (the CLI's export flags and Python's lists come from them).
//
//   std::string summary;
//   report::ExtraFile trace{"trace.json", [&] { return WriteTrace(t, dir + "/trace.json"); }};
//   Status s = report::WriteReportFiles(r, dir, options.output, &summary, {trace});
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "report/report.h"
#include "report/run_writer.h"
#include "trainprof/options.h"
#include "trainprof/status.h"

namespace trainprof::report {

// The list, in the order written within each phase. Mutable so that a test can add a writer of
// its own (and remove it again).
std::vector<RunWriter>& RunWriters();

// Every exporter's keys (RunWriter::keys), in the list's order.
std::vector<ExportKey> ExportKeys();
// Turns every exporter off: a rank's own folder, or one repeat of a pooled run, is not exported.
void ClearExporters(Options::Output& o);
// The command-line flag of an exporter's key: "--mlflow-experiment" for output.mlflow_experiment.
std::string ExportFlag(const ExportKey& k);
// The exporters `o` turns on.
std::vector<const RunWriter*> EnabledExporters(const Options::Output& o);

// A file only the caller can write (its data is not in the Report: trace.json), written after
// the main and side phases and before the exporters.
struct ExtraFile {
  std::string what;
  std::function<Status()> write;
};

// Renders `r` for the terminal into *summary and runs every enabled writer of RunWriters() and
// `extra` into `dir`. Errors: the first output that failed, named (the others are still
// attempted).
Status WriteReportFiles(const Report& r, const std::string& dir, const Options::Output& output,
                        std::string* summary, const std::vector<ExtraFile>& extra = {});

// The files only the caller can write, for the folder `dir` they are written into.
using ExtrasFor = std::function<std::vector<ExtraFile>(const std::string& dir)>;

// The run folder of `r`, written whole or not at all (run_folder_writer.cc): every file goes
// into a folder beside the final one (<final>.partial-<pid>-<n>), which takes the final name
// once all are written. The final folder is output.run_dir, else a new
// <dir>/<UTC time>-<name>[-N]. A run_dir holding an earlier run is refused before anything is
// written unless output.overwrite; then that run's files are replaced by the new ones (other
// files stay). `r` gets its meta stamped (StampMeta) and run_dir, the final folder; *summary
// the terminal text. The exporters (an MLflow store, a TensorBoard log dir) run on the folder
// once it is in place; their first error goes to *exported (which may be null), and the folder
// stays. Returns the final folder. Errors name the folder; after one, the final folder is as it
// was and no partial folder is left.
StatusOr<std::string> WriteRunFolder(Report& r, const Options::Output& out, int64_t unix_ns,
                                     std::string* summary, const ExtrasFor& extras = {},
                                     Status* exported = nullptr);

// The two halves of WriteReportFiles: the folder's own files (the main and side writers, then
// `extra`), and the exporters, which copy a written folder elsewhere. Errors: as
// WriteReportFiles'.
Status WriteFolderFiles(const Report& r, const std::string& dir, const Options::Output& output,
                        std::string* summary, const std::vector<ExtraFile>& extra);
Status RunExporters(const Report& r, const std::string& dir, const Options::Output& output,
                    const std::string& summary);

// `trainprof export`: the exporters alone (those enabled in `output`) on a finished run folder
// whose report is `r` (its summary.txt is read when present). Errors: the first exporter that
// failed; none enabled (InvalidArgument).
Status ExportRun(const Report& r, const std::string& dir, const Options::Output& output,
                 bool replace);

}  // namespace trainprof::report
