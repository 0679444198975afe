// The one way from trace files to a report: every front end (`trainprof analyze`, `merge`,
// `--mpi`, `diff`, `run --traces`, Python's `trainprof.analyze` and `trainprof.hta`, the torch
// Session) calls these, and keeps only what is its own (terminal, history, DataFrames).
//
//   AnalyzeRequest req;                                       // the options (analyze_request.h)
//   TRAINPROF_ASSIGN_OR_RETURN(RunInputs in, InputsOfOneRun({"traces/"}, "reads one run"));
//   StatusOr<std::unique_ptr<RunResult>> run = AnalyzeRun(in, req, {});
//   // (*run)->report: every section, files.N meta, the skipped entries, data quality
//
// The steps are public too, for the front ends that stop or start between them:
// `--summary-only` writes ReadRun's summaries; `merge` and `--mpi`'s rank 0 call ReportRun on
// summaries read back; `diff` and `run --traces` keep the models (LoadRun).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analysis/run/request.h"
#include "report/report.h"
#include "trace/input_kind.h"
#include "trace/trace_files.h"
#include "trace/trace_model.h"
#include "trainprof/status.h"

namespace trainprof::analysis {

// The analyses' types stay out of this header (request.h and this header declare them): the
// structs below that hold them define their special members in driver.cc, so a front end that
// asks for a report and reads RunResult::report compiles none of the analyses' headers. The front
// ends that handle summaries themselves (merge, --mpi, --summary-only, Python's HTA methods)
// include rank_summary.h.
struct RankAnalysis;
class RankResults;

// One run's inputs: its trace files and how the run is named.
struct RunInputs {
  std::vector<std::string> files;
  std::vector<std::string> skipped;  // the folder's entries that are not traces, one line each
  // A folder's run: a file that cannot be read is skipped (and said); a file given by name: its
  // error is the run's.
  bool skip_unreadable = false;
  std::string input;  // the run as the report names it (meta input, the summaries' input)
  // The run as an error names it ("traces/ (8 files)"); "": the file, or the combined
  // summaries' input with the count (merge, which learns the input only from them).
  std::string what;
  // What the files are (trace/input_kind.h): timelines, or one memory snapshot.
  trace::InputKind kind = trace::InputKind::kKinetoJson;
  // merge --step-range: only these steps (WindowSummary, digest.h), and the report's sections
  // that a window answers (ReportViews::kAcrossRanks).
  std::optional<std::pair<int64_t, int64_t>> step_range;
};

// The run `run` of a listing made from `path` (trace::ListTraceRuns): a folder's strays are its
// skipped entries, and its unreadable files are skipped too. The run's files move out of the
// listing (a path a rank is kept by its RankInfo, the report's meta and the run's files: not
// by the listing too, 5 MB a copy at 100,000 ranks).
RunInputs InputsOfListedRun(trace::TraceListing& listing, size_t run, const std::string& path);

// The trace files of `paths` as one run: each path a file or a folder of one run's ranks; or
// one memory snapshot pickle, told by its bytes (kind kMemorySnapshot).
// Errors: a path that does not exist or holds no trace; a folder that holds several runs (the
// message names them and ends with `one_run_why`, e.g. "diff compares one run with another").
StatusOr<RunInputs> InputsOfOneRun(const std::vector<std::string>& paths,
                                   const std::string& one_run_why);

// What a front end adds to the reading: a progress callback (bytes done, bytes in all, from
// reading threads), a look at each model before it is dropped, and a way to stop.
struct RunHooks {
  std::function<void(int64_t, int64_t)> progress;
  ModelHook model;
  // True stops the reading (trace/trace_files.h): the call fails with kCancelled.
  std::function<bool()> cancelled;
  // When set, each file's result (its index, then the summary or the error) is handed here as
  // soon as it is made, from the reading threads, one call at a time, and is not kept:
  // SummariseFiles then returns no results (`--mpi` sends each on its way).
  std::function<void(size_t, StatusOr<RankSummary>)> take;
  // With take: which files this process reads (trace::ReadManyOptions::claim).
  std::function<bool(size_t)> claim;
};

// The summaries that were read, in file order (every row read), and the run's skipped entries
// (the inputs' and the unreadable files').
struct ReadRunResult {
  ReadRunResult();
  ReadRunResult(ReadRunResult&&) noexcept;
  ReadRunResult& operator=(ReadRunResult&&) noexcept;
  ~ReadRunResult();
  std::unique_ptr<RankResults> summaries;  // never null
  std::vector<std::string> skipped;
};

// Reads and summarises each file (in parallel, r.threads), keeping one model per thread at a
// time; results in the files' order, a file that cannot be read as its error.
RankResults SummariseFiles(const std::vector<std::string>& files, const AnalyzeRequest& r,
                           const std::string& input, const RunHooks& hooks);

// Reads and summarises every file, in parallel. Errors: no file could be read (the first
// failure), or with !in.skip_unreadable, the first file that could not be.
StatusOr<ReadRunResult> ReadRun(const RunInputs& in, const AnalyzeRequest& r,
                                const RunHooks& hooks);
// The same from summaries made elsewhere (SummariseFiles' results, `--mpi`'s gathered ones).
StatusOr<ReadRunResult> KeepRun(const RunInputs& in, RankResults results);

// A run analysed: its report, and the summaries it is built from, which many-rank tables read
// as they are written (keep the result until the report is written).
struct RunResult {
  RunResult();
  ~RunResult();
  RunResult(const RunResult&) = delete;
  RunResult& operator=(const RunResult&) = delete;
  // The files a run folder of this run gets beyond the report's own (RunExtras); the result
  // must outlive the writing.
  report::ExtrasFor Extras() const;
  // For a process that writes this run's folder once and then only records it (the run
  // history and the exporters read no rank's detail): each rank's scratch record goes as its
  // CSV rows are written (ranks/detail_store.h). Nothing to do for a run of few ranks.
  void LetDetailGoOnceWritten() const;
  std::unique_ptr<Summaries> summaries;         // never null
  std::shared_ptr<const RanksMatched> matched;  // the report's, kept for the run's files
  report::Report report;
  std::vector<std::string> files;  // as read (meta files.N)
};

// The summaries combined and the report built; `in`'s files move into the result's. Errors:
// summaries of different options; nothing to analyse (worded for the steps mode the summaries
// were made with).
StatusOr<std::unique_ptr<RunResult>> ReportRun(ReadRunResult read, RunInputs in);

// ReadRun, then ReportRun; for a memory snapshot, its report (SnapshotReport), with no
// summaries.
StatusOr<std::unique_ptr<RunResult>> AnalyzeRun(const RunInputs& in, const AnalyzeRequest& r,
                                                const RunHooks& hooks);

// A run's models, kept whole, and their analyses (diff, run --traces).
struct LoadedRun {
  LoadedRun();
  LoadedRun(LoadedRun&&) noexcept;
  LoadedRun& operator=(LoadedRun&&) noexcept;
  ~LoadedRun();
  std::vector<std::string> files;
  std::vector<trace::TraceModel> models;
  std::vector<RankAnalysis> analyses;
};

// Reads every file (in parallel, sorted by rank), and analyses them. `merge_processes`: a
// process's several files (tensorboard_trace_handler's cycles) are one rank. `skipped` (may be
// null) gets the inputs' skipped entries and, with skip_unreadable, each unreadable file's line,
// whether or not the call succeeds. Errors: as ReadRun.
StatusOr<LoadedRun> LoadRun(const RunInputs& in, const AnalyzeRequest& r, const RunHooks& hooks,
                            bool merge_processes = false,
                            std::vector<std::string>* skipped = nullptr);

// Per file of `run` (its `files`), the clock offset of its rank in ns, when the run's collectives
// can be trusted to give one (the distributed section's clock_offsets); else empty.
std::vector<int64_t> ClockOffsetsByFile(const LoadedRun& run);

// Whether `a` and `b` can be compared (DiffRun checks it first). Errors: a memory snapshot with
// anything but one other file.
Status CheckDiffPair(const RunInputs& a, const RunInputs& b);

// Two runs compared, as `trainprof diff A B` and MCP's diff report them: two memory snapshots
// side by side (SnapshotDiffReport), or two runs' traces, each read whole and analysed (LoadRun,
// with `ha` and `hb`), then diffed; each side is labelled with its `input`. `cut` (may be null)
// gets the traces that were cut short. Errors: CheckDiffPair's; a snapshot compared with a file
// that is not one (SnapshotDiffReport's); as LoadRun.
StatusOr<report::Report> DiffRun(const RunInputs& a, const RunInputs& b, const AnalyzeRequest& r,
                                 const RunHooks& ha, const RunHooks& hb,
                                 std::vector<std::string>* cut = nullptr);

// Models made elsewhere (the C++ job's recording, trace/inprocess/) analysed as LoadRun
// analyses the models it reads; `files` are the models' paths.
LoadedRun AnalyzeModels(std::vector<trace::TraceModel> models, const AnalyzeRequest& r);

// The analyze sections of `run` (ReportOfLoaded) added to a torch report `into` (the torch
// Session's torch.profiler trace or events, the C++ job's recording): an id `into` has already
// prefixed "trace_", titles with `title_prefix`, without analyze's operator view (the torch
// report's operator table is PyTorch's key_averages, operators/operator_report.h), the
// recommendations, the data quality and the diagnostics, which the torch report has of its own,
// and without the views that have nothing to show (the GPU views of a CPU-only run) or that
// `also_skip` names. True when the run holds GPU work.
bool AdoptTraceSections(const LoadedRun& run, const AnalyzeRequest& r, const std::string& label,
                        const std::string& title_prefix, report::Report& into,
                        const std::vector<std::string>& also_skip = {});

// The analyze report of a loaded run, as `trainprof analyze` builds it from the same models and
// request; `label` names the input in its header. For the front ends that keep the models (run
// --traces, the Python torch Session), which adopt its sections into their own report.
report::Report ReportOfLoaded(const LoadedRun& run, const AnalyzeRequest& r,
                              const std::string& label);

}  // namespace trainprof::analysis
