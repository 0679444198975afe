// The analysis options of `trainprof analyze` as a user gives them (flags, Python keywords), and
// the analyses' own options made from them. The driver (driver.h) takes a request.
//
//   AnalyzeRequest req;                                   // --hta-compat, --critical-path, ...
//   req.hta_compat = true;
//   AnalyzeOptions o = ToOptions(req);
#pragma once

#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "report/run_writers.h"
#include "trace/trace_model.h"

namespace trainprof::analysis {

// Declared here, defined with the analyses (rank_analysis.h, rank_summary.h, cross_rank_path.h):
// a front end that only asks for a report never compiles them.
struct AnalyzeOptions;
struct RankSummary;
struct Summaries;
struct RanksMatched;

// The analysis options of `trainprof analyze`, as the flags spell them (units as given). Their
// flags, keywords, checks and help are defined once, in options.h.
struct AnalyzeRequest {
  std::string steps = "complete";  // --steps: "complete" or "all"
  bool hta_compat = false;         // --hta-compat
  bool hta_last_step = false;      // --hta-last-step: --hta-compat keeps the last ProfilerStep
  double kernel_wait_us = 30, runtime_cutoff_us = 50, launch_delay_cutoff_us = 100;
  int top_kernels = 10;
  double hta_duration_ratio = 0.8;               // --hta-duration-ratio: HTA's fold (hta.h)
  std::vector<std::string> dataloader_patterns;  // --dataloader-pattern, repeatable
  std::vector<std::string> steps_from;           // --steps-from, repeatable
  double peak_tflops = 0;                        // --peak-tflops; 0: the table's, by GPU name
  double peak_tbps = 0;                          // --peak-tbps; 0: the table's
  int threads = 0;                               // files read in parallel; 0: one per core
  std::vector<std::string> capture_traces;       // --capture-trace: graph capture traces
  std::optional<std::string> critical_path;      // --critical-path's value; absent: not asked
  std::vector<std::string> data_load_events;     // --data-load-events: regexes, with the above
  bool critical_path_all_edges = false;          // keep every edge of the path's graph
  bool allow_data_errors = false;  // a data error is not a failure (the front end's to judge)
  // Memory snapshots: the window, in seconds after the history's first event (--from, --to;
  // Python's from_s, to_s: `from` is a word Python keeps for itself; NaN: none).
  double from_s = std::numeric_limits<double>::quiet_NaN();
  double to_s = std::numeric_limits<double>::quiet_NaN();
};

// The analyses' options. Errors: none; values were checked where they were given.
AnalyzeOptions ToOptions(const AnalyzeRequest& r);

// Called on the reading thread with each file's model and its summary, before the model is
// dropped (concurrently for different files): what a caller computes beyond the summary.
using ModelHook = std::function<void(size_t file, const trace::TraceModel&, const RankSummary&)>;

// critical_path.trace.json in `dir`: the paths of --critical-path for Perfetto, the ranks on
// one clock (`m`: MatchRanks of `s`, made here when null). `s` must outlive the returned writer.
report::ExtraFile CriticalPathTraceFile(const Summaries& s, std::shared_ptr<const RanksMatched> m,
                                        const std::string& dir);

// The files a run folder of `s` gets beyond the report's own (critical_path.trace.json with
// --critical-path, cross_rank_path.trace.json), for report::WriteRunFolder; `m` is MatchRanks
// of `s`, as the report was built from. `s` must outlive the writing.
report::ExtrasFor RunExtras(const Summaries& s, std::shared_ptr<const RanksMatched> m);

}  // namespace trainprof::analysis
