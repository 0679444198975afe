// What `trainprof analyze` and Python's `trainprof.analyze()` share: the options as a user gives
// them, the files of a run read and summarised, and the run's report. The CLI adds its terminal,
// run folder and history around these; the Python package hands the report to pandas.
//
//   AnalyzeRequest req;                                   // --hta-compat, --critical-path, ...
//   req.hta_compat = true;
//   auto read = SummariseFiles(files, req, "traces/", {});
//   auto kept = KeepReadSummaries(std::move(read), nullptr);  // a file's error is the error
//   auto all = CombineSummaries(std::move(*kept), "traces/");
//   if (std::string why = NothingToAnalyse(*all, "traces/", req.steps); why.empty())
//     report::Report r = BuildRunReport(*all, files, {});
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "analysis/rank_summary.h"
#include "report/report.h"
#include "report/run_writers.h"
#include "trace/trace_model.h"
#include "trainprof/status.h"

namespace trainprof::analysis {

// The analysis options of `trainprof analyze`, as the flags spell them (units as given).
struct AnalyzeRequest {
  std::string steps = "complete";  // --steps: "complete" or "all"
  bool hta_compat = false;         // --hta-compat
  double kernel_wait_us = 30, runtime_cutoff_us = 50, launch_delay_cutoff_us = 100;
  int top_kernels = 10;
  std::vector<std::string> dataloader_patterns;  // --dataloader-pattern, repeatable
  double peak_tflops = 0;                        // --peak-tflops; 0: the table's, by GPU name
  double peak_tbps = 0;                          // --peak-tbps; 0: the table's
  int threads = 0;                               // files read in parallel; 0: one per core
  std::vector<std::string> capture_traces;       // --capture-trace: graph capture traces
  std::string critical_path;                     // --critical-path's value
  bool critical_path_given = false;
};

// The analyses' options. Errors: none; values were checked where they were given.
AnalyzeOptions ToOptions(const AnalyzeRequest& r);

// Called on the reading thread with each file's model and its summary, before the model is
// dropped (concurrently for different files): what a caller computes beyond the summary.
using ModelHook = std::function<void(size_t file, const trace::TraceModel&, const RankSummary&)>;

// Reads and summarises each file (in parallel, r.threads), keeping one model per thread at a
// time; results in the files' order, a file that cannot be read as its error. `progress`
// (may be empty) gets bytes done and bytes in all, from reading threads.
std::vector<StatusOr<RankSummary>> SummariseFiles(
    const std::vector<std::string>& files, const AnalyzeRequest& r, const std::string& input,
    const std::function<void(int64_t, int64_t)>& progress, const ModelHook& hook = {});

// The summaries that were read, in order. With `skipped` (a folder's files), a file that failed
// is left out and said there; without it (a file given by name), the first failure is the
// error. Errors: no file could be read.
StatusOr<std::vector<RankSummary>> KeepReadSummaries(std::vector<StatusOr<RankSummary>> results,
                                                     std::vector<std::string>* skipped);

// A trace with no event, or no step with anything in it, has no answer. Returns the one-line
// error ("<what>: nothing to analyse: ..."), or "" when there is something to analyse.
std::string NothingToAnalyse(const Summaries& s, const std::string& what,
                             const std::string& steps_flag);

// The run's report: every section, the files read (meta files.N), the entries skipped
// (input_skipped diagnostics) and the data-quality section. The caller adds the run's own meta
// (version, creation time, run folder) as it writes it. `stream_rank_tables`: with many ranks,
// per-rank tables read `s` as their CSVs are written (BuildAnalyzeReport): keep `s` till then.
report::Report BuildRunReport(const Summaries& s, const std::vector<std::string>& files,
                              const std::vector<std::string>& skipped,
                              bool stream_rank_tables = false);

// critical_path.trace.json in `dir`: the paths of --critical-path for Perfetto, the ranks on
// one clock. `s` must outlive the returned writer.
report::ExtraFile CriticalPathTraceFile(const Summaries& s, const std::string& dir);

}  // namespace trainprof::analysis
