// What `analyze`, `merge` and `analyze --mpi` share: the flags, the rank summaries written to a
// folder, and one run's report (analysis/run/driver.h) written to its folder (analyze_command.cc).
//
//   auto run = analysis::ReportRun(std::move(read), inputs, flags.steps);  // the driver
//   int code = EmitRun(**run, flags, flags.out, nullptr);
#pragma once

#include <atomic>
#include <limits>
#include <string>
#include <vector>

#include "analysis/run/driver.h"
#include "base/progress.h"
#include "cli/commands.h"
#include "report/run_folder.h"
#include "trace/trace_files.h"
#include "trainprof/options.h"

namespace trainprof::cli {

// The analysis options (analysis::AnalyzeRequest, shared with Python's trainprof.analyze) and
// what only the command has: the input, the terminal, the run folder and the history.
struct AnalyzeFlags : analysis::AnalyzeRequest {
  std::string path;
  std::string format = "text";
  std::string progress = "auto";
  Options::Output out;
  std::string db;             // run history (--db)
  bool summary_only = false;  // --summary-only: write the ranks' summaries, not the report
  bool mpi = false;           // --mpi: the ranks spread over MPI processes
  std::string digest;  // --digest DIR: each rank's digest (analysis/ranks/digest.h) written there
  bool quiet = false;  // -q: no progress, no report on the terminal (the folder is written)
};

// With --digest DIR, each summary's digest written into DIR (in parallel). Returns false, having
// said why on stderr, when one could not be written.
bool WriteDigests(analysis::RankResults& results, const AnalyzeFlags& f);

// Set when WriteDigests failed in this process: the command then exits kExitNoOutput.
std::atomic<bool>& DigestFailed();

// --format, --progress, the snapshot and output folder options, and the analysis options that
// diff takes too (analysis/run/options.h).
void AddCommonOptions(CLI::App* sub, AnalyzeFlags* f);

// The options of analysis/run/options.h as flags bound to `r` (analyze_options.cc); `diff`: only
// those `trainprof diff` takes. Call the returned function once the command line is parsed.
std::function<void()> AddAnalyzeOptions(CLI::App* sub, analysis::AnalyzeRequest* r, bool diff);

// Writes the run folder of the run's report and records the run. `json`: where --format json
// collects several runs' reports, else null. Returns the exit code.
int EmitRun(analysis::RunResult& run, const AnalyzeFlags& f, const Options::Output& out,
            std::string* json);

// A progress bar on stderr while big inputs (32 MiB or more) are read; off with --format json.
class ReadProgress {
 public:
  ReadProgress(const AnalyzeFlags& f, size_t files);
  ~ReadProgress();
  // For trace::ReadManyOptions::progress; valid while this object lives.
  std::function<void(int64_t, int64_t)> Callback();
  // Ends the line now (the destructor does otherwise): before another reading's progress.
  void End();

 private:
  void Update(int64_t done, int64_t total);
  base::Progress progress_;
  size_t files_;
  bool began_ = false;
  int64_t last_ns_ = 0;
};

// Reads and summarises each file (in parallel, f.threads), keeping one model per thread at a
// time; results in the files' order, a file that cannot be read as its error. With `take`
// (RunHooks::take), each result goes there as it is made instead, its digest written first,
// and with `claim` only the files it claims are read (RunHooks::claim).
analysis::RankResults SummariseEach(
    const std::vector<std::string>& files, const AnalyzeFlags& f, const std::string& input,
    const std::function<void(size_t, StatusOr<analysis::RankSummary>)>& take = {},
    const std::function<bool(size_t)>& claim = {});

// One run from its files' summaries (SummariseEach's results, in file order): its report
// written (EmitRun), or with --summary-only its summaries. Returns the exit code, or
// kRunUnreadable when no file could be read (said on stderr, as "skipped" when the input holds
// `many` runs).
inline constexpr int kRunUnreadable = -1;
int ReportRun(analysis::RunInputs in, const AnalyzeFlags& f, analysis::RankResults read,
              const Options::Output& out, bool many, std::string* json);

// Every run of the listing, each summarised by `summarise` (in file order; empty: SummariseEach
// here) and reported with ReportRun; the exit code is the worst run's (kExitBadInput when none
// could be read).
using SummariseRunFn = std::function<analysis::RankResults(const trace::TraceRun&)>;
// Each run's files move out of the listing as it is reported (InputsOfListedRun).
int AnalyzeRuns(const AnalyzeFlags& f, trace::TraceListing& listing,
                const SummariseRunFn& summarise = {});

// DIR/<trace file name>.tpsum for each summary. Errors: the folder or a file cannot be written.
Status WriteSummaries(analysis::RankResults& all, const std::string& dir);

// `analyze --mpi` (mpi_analyze.cc): every process's listing merged (a process's own may have
// failed: its node holds no trace), this process's share of the ranks read, reduced to MPI rank
// 0, which writes the report. Without MPI support: an error saying so.
int RunAnalyzeMpi(const AnalyzeFlags& f, const StatusOr<trace::TraceListing>& listing);

}  // namespace trainprof::cli
