// `trainprof analyze PATH`: PyTorch profiler (Kineto) traces or Nsight Systems exports, one file or
// a folder of ranks, read in parallel, analysed (overview, GPU summary, HTA breakdowns,
// recommendations) and written to a run folder like `profile`'s.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>

#include "analysis/run/driver.h"
#include "base/atomic_file.h"
#include "base/malloc_tuning.h"
#include "base/progress.h"
#include "base/text.h"
#include "cli/analyze_run.h"
#include "cli/commands.h"
#include "cli/snapshot_command.h"
#include "history/run_lookup.h"
#include "report/data_quality.h"
#include "report/format.h"
#include "report/json.h"
#include "report/run_folder.h"
#include "report/run_meta.h"
#include "report/run_writers.h"
#include "trace/trace_files.h"
#include "trainprof/version.h"

namespace trainprof::cli {

using history::LoadComparison;
using history::LoadedComparison;
using history::LoadRun;
using history::OpenHistory;
namespace {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

namespace {

// One run's path (a file, or a flat folder of ranks), as diff takes it.
// A diff side that is not a file or folder: an analyze run of the history (id, latest~N) or
// an analyze run folder, whose report names the traces it read (meta input, as given to
// analyze: a relative one is found from the working folder).
StatusOr<std::string> TracesOfRun(const std::string& name, const std::string& db_flag) {
  std::error_code ec;
  const bool folder = std::filesystem::exists(std::filesystem::path(name) / "report.json", ec);
  if (std::filesystem::exists(name, ec) && !folder) return name;
  std::unique_ptr<history::RunDb> db;
  TRAINPROF_ASSIGN_OR_RETURN(history::LoadedRun run, LoadRun(name, db_flag, db));
  const std::string traces = report::MetaText(run.report, "input");
  if (run.report.kind != "analyze" || traces.empty() || traces == "-") {
    return InvalidArgument(fmt::format(
        "{}: a {} run that names no trace it read (diff compares traces; an analyze run of "
        "this version names them)",
        name, run.report.kind));
  }
  if (!std::filesystem::exists(traces, ec))
    return NotFound(
        fmt::format("{}: its traces ({}) are not there (moved, or a relative path "
                    "from another working folder)",
                    name, traces));
  return traces;
}

// One side of a diff: a trace file or a memory snapshot, or a folder holding one run's traces
// at any depth (a TensorBoard log dir's plugins/profile/<run>/, trainprof run's traces/), as
// analyze finds them; a file that cannot be read is the error, as for a file given by name.
// The report labels the side with `side`, as given.
StatusOr<analysis::RunInputs> DiffSideInputs(const std::string& side, const AnalyzeFlags& f) {
  TRAINPROF_ASSIGN_OR_RETURN(const std::string path, TracesOfRun(side, f.db));
  TRAINPROF_ASSIGN_OR_RETURN(
      analysis::RunInputs in,
      analysis::InputsOfOneRun({path}, "diff compares one run with another"));
  in.skip_unreadable = false;
  in.input = side;
  return in;
}

}  // namespace

namespace {

// Writes the run folder and prints the report (or its JSON).
// `record`: add the run to the run history (analyze; a diff is not a run).
// `json`: where --format json collects the report (several runs print one array), else null.
int Emit(report::Report& r, const AnalyzeFlags& f, bool record, std::string* json = nullptr,
         const Options::Output* out = nullptr, const report::ExtrasFor& extras = {}) {
  std::string summary;
  Status exported;
  auto dir = report::WriteRunFolder(r, out != nullptr ? *out : f.out, NowNs(), &summary, extras,
                                    &exported);
  if (!dir.ok()) {
    fmt::print(stderr, "trainprof: {}\n", dir.status().message());
    return kExitNoOutput;
  }
  if (f.format == "json" && json != nullptr) {
    *json += (json->empty() ? "" : ",\n") + report::RenderJsonString(r);
  } else if (f.format == "json") {
    std::cout << report::RenderJsonString(r) << "\n";
  } else if (!f.quiet) {
    fmt::print("{}", summary);
    fmt::print("\nReports written to {}/ (report.html, summary.txt, report.json, *.csv)\n", *dir);
  }
  if (!exported.ok()) {  // the run folder stands; a copy of it elsewhere failed
    fmt::print(stderr, "trainprof: {}\n", exported.message());
    return kExitNoOutput;
  }
  return record ? RecordRun(r, *dir, f.db, f.format == "json" || f.quiet) : kExitOk;
}

}  // namespace

int EmitReport(report::Report& r, const AnalyzeFlags& f, const Options::Output& out) {
  return Emit(r, f, /*record=*/false, nullptr, &out);
}

int EmitRun(analysis::RunResult& run, const AnalyzeFlags& f, const Options::Output& out,
            std::string* json) {
  report::Report& r = run.report;
  run.LetDetailGoOnceWritten();  // written once here; what follows reads no rank's detail
  const int code = Emit(r, f, /*record=*/true, json, &out, run.Extras());
  if (!report::HasDataError(r)) return code;
  // The reports are written; the figures they hold are not to be trusted as they stand.
  for (const report::Diagnostic& d : r.diagnostics)
    if (report::IsDataError(d)) fmt::print(stderr, "trainprof: {}\n", d.message);
  return code != kExitOk || f.allow_data_errors ? code : kExitDataError;
}

namespace {

// A file, or a folder searched recursively: each folder of traces below it is its own run, with
// its own report and run folder (not ranks of one job). In a folder, what is not a trace (a
// config.json, a dangling link) is skipped and listed in the report of its run; a run whose
// every file fails is skipped with a line on stderr; only an input with nothing readable is an
// error. The exit code is the worst run's. With --summary-only, each run's rank summaries are
// written to -o DIR (DIR/runK/ when the input holds several runs) instead of its report.
int RunAnalyze(const AnalyzeFlags& f) {
  // Memory snapshots are a report each (snapshot_command.cc): the file itself, or those the
  // folder's one listing met.
  if (trace::IsMemorySnapshot(f.path)) return AnalyzeSnapshots({f.path}, f);
  auto listing = trace::ListTraceRuns(f.path);
  const int snapshots = listing.ok() ? AnalyzeSnapshots(listing->snapshots, f) : kExitOk;
  if (listing.ok() && listing->runs.empty()) return snapshots;
  size_t files = 0;
  for (const trace::TraceRun& run : listing.ok() ? listing->runs : std::vector<trace::TraceRun>{})
    files += run.files.size();
  base::TuneMallocForCommand(files);  // before reading: its memory (base/malloc_tuning.h)
  // Under --mpi a process that sees no trace (its node's disk holds none) still takes part.
  if (f.mpi) return RunAnalyzeMpi(f, listing);
  if (!listing.ok()) {
    fmt::print(stderr, "trainprof: {}\n", listing.status().message());
    return kExitBadInput;
  }
  const int code = std::max(snapshots, AnalyzeRuns(f, *listing));
  return DigestFailed().load() ? std::max(code, kExitNoOutput) : code;
}

int RunDiff(const AnalyzeFlags& f, const std::string& b_path) {
  base::TuneMallocForCommand(1);  // each side is held whole, as one big trace is
  StatusOr<analysis::RunInputs> a = DiffSideInputs(f.path, f);
  StatusOr<analysis::RunInputs> b = a.ok() ? DiffSideInputs(b_path, f) : a.status();
  if (!b.ok()) {
    fmt::print(stderr, "trainprof: {}\n", b.status().message());
    return kExitBadInput;
  }
  // One side's progress line, then the other's.
  ReadProgress pa(f, a->files.size()), pb(f, b->files.size());
  std::function<void(int64_t, int64_t)> b_progress;  // none when progress is off
  if (auto on_b = pb.Callback()) {
    b_progress = [&pa, on_b](int64_t done, int64_t total) {
      pa.End();
      on_b(done, total);
    };
  }
  std::vector<std::string> cut;
  StatusOr<report::Report> r =
      analysis::DiffRun(*a, *b, f, {pa.Callback(), {}, {}, {}}, {b_progress, {}, {}, {}}, &cut);
  if (!r.ok()) {
    fmt::print(stderr, "trainprof: {}\n", r.status().message());
    return kExitBadInput;
  }
  const int code = Emit(*r, f, /*record=*/false);
  // As analyze: a side cut short is a data error, exit 4 after the reports are written.
  if (code != kExitOk || cut.empty()) return code;
  fmt::print(stderr, "trainprof: {}: cut short; the diff leaves out what was lost\n",
             fmt::join(cut, ", "));
  return f.allow_data_errors ? code : kExitDataError;
}

}  // namespace

void AddCommonOptions(CLI::App* sub, AnalyzeFlags* f) {
  sub->add_option("--format", f->format,
                  "text: the report on the terminal; json: report.json "
                  "on stdout for scripts")
      ->check(CLI::IsMember({"text", "json"}))
      ->default_val("text");
  sub->add_option("--progress", f->progress, "Progress on stderr for large inputs")
      ->check(CLI::IsMember({"auto", "bar", "lines", "off"}))
      ->default_val("auto");
  AddRunFolderOptions(sub, &f->out);
}

namespace {

// No PATH: most often `--critical-path PATH`, whose optional ANNOTATION took the path.
std::string MissingPath(const AnalyzeFlags& f) {
  std::error_code ec;
  if (f.critical_path && !f.critical_path->empty() &&
      std::filesystem::exists(*f.critical_path, ec)) {
    return fmt::format(
        "PATH is missing: --critical-path took {0} as its ANNOTATION. Put --critical-path after "
        "PATH (trainprof analyze {0} --critical-path), or give the annotation with = "
        "(--critical-path=forward)",
        *f.critical_path);
  }
  return "PATH is required: a trace, an Nsight export, a snapshot, or a folder of them";
}

}  // namespace

void AddAnalyzeCommand(CLI::App& app, std::function<int()>* run) {
  auto f = std::make_shared<AnalyzeFlags>();
  f->out.name = "analyze";
  CLI::App* sub = app.add_subcommand(
      "analyze",
      "Analyse PyTorch profiler (Kineto) traces, Nsight Systems SQLite exports and memory "
      "snapshots: the TensorBoard plugin's overview and GPU summary, HTA's temporal / idle / "
      "kernel / overlap / launch breakdowns, recommendations");
  sub->footer(
      "PATH is a PyTorch profiler trace (JSON, plain or gzip: told by its bytes, whatever its "
      "name), an Nsight Systems profile exported to SQLite (nsys export --type sqlite; one rank "
      "per process), a memory snapshot pickle, or a folder of them, one trace per rank (the rank "
      "comes from distributedInfo, else the file name). trainprof's own run folders work too.\n"
      "Examples:\n"
      "  trainprof analyze traces/                  # every rank in the folder\n"
      "  trainprof analyze rank0.pt.trace.json.gz --format json | jq .sections\n"
      "  trainprof analyze traces/ --hta-compat     # HTA 0.6.1's event selection and rounding\n"
      "  trainprof analyze run.sqlite --steps-from step  # nsys, NVTX ranges 'step N' as steps\n"
      "  trainprof analyze traces/ --summary-only -o sums/ && trainprof merge sums/\n"
      "  mpirun -n 4 trainprof analyze traces/ --mpi  # ranks spread over MPI processes\n"
      "  trainprof analyze traces/ --digest dig/ && trainprof merge dig/ --step-range 10-19\n"
      "Definitions: docs/trace-analysis.md\n" +
      ExitCodesHelp({{kExitOk, "analysed; reports written and the run recorded"},
                     {kExitFailure, "the run could not be recorded in the run history"},
                     {kExitBadInput, "bad input: an option, or no trace could be read"},
                     {kExitNoOutput, "the run folder cannot be created or written"},
                     {kExitDataError,
                      "the input has a data error (a trace cut short); reports "
                      "written (--allow-data-errors: exit 0)"}}));
  sub->add_option("path", f->path, "Trace, Nsight export, snapshot, or a folder of them");
  AddCommonOptions(sub, f.get());
  std::function<void()> finish = AddAnalyzeOptions(sub, f.get(), /*diff=*/false);
  AddDbOption(sub, &f->db, /*records=*/true);
  sub->add_flag("-q,--quiet", f->quiet,
                "Print no progress and no report (as in run and profile; the run folder is still "
                "written and recorded)");
  sub->add_flag("--summary-only", f->summary_only,
                "Write each rank's summary (<trace file>.tpsum) into -o DIR instead of the "
                "report; `trainprof merge DIR...` builds the report from them");
  sub->add_option("--digest", f->digest,
                  "Also write each rank's digest (DIR/rank_NNNNN.digest.sqlite: SQLite tables of "
                  "its steps, collectives, top kernels and operators, and its summary) so that "
                  "`trainprof merge DIR [--step-range A-B]` asks again without the traces")
      ->type_name("DIR");
  sub->add_flag("--mpi", f->mpi,
                "Under mpirun (or srun): each process reads its share of the rank files where "
                "they lie (its own ranks' when the names say rank<N>; node-local disks too); "
                "rank 0 gathers their summaries and writes the report");
  sub->callback([f, run, finish] {
    finish();
    if (f->path.empty()) throw CLI::RequiredError(MissingPath(*f));
    *run = [f] { return RunAnalyze(*f); };
  });

  auto d = std::make_shared<AnalyzeFlags>();
  d->out.name = "diff";
  auto b_path = std::make_shared<std::string>();
  CLI::App* diff = app.add_subcommand(
      "diff",
      "Compare two runs' traces (HTA's trace diff): step time by category, and the "
      "operators and kernels added, removed, grown or shrunk most per step");
  diff->footer(
      "A and B are trace files or folders, as for analyze, or analyze runs of the history (id, "
      "latest~N) or their run folders: the traces they read.\nExample:\n"
      "  trainprof diff before/ after/ --top 15\n" +
      ExitCodesHelp({{kExitOk, "compared; reports written"},
                     {kExitBadInput, "bad input: an option, or a trace that cannot be read"},
                     {kExitNoOutput, "the run folder cannot be created or written"},
                     {kExitDataError,
                      "a trace is cut short; reports written (--allow-data-errors: exit 0)"}}));
  diff->add_option("a", d->path,
                   "Trace file or folder of the baseline run, or an analyze run (id, latest~N, "
                   "run folder)")
      ->required();
  diff->add_option("b", *b_path, "The same for the run to compare")->required();
  diff->add_option("--top", d->top_kernels, "Rows listed per kind of change")
      ->check(CLI::Range(1, 10000))
      ->default_val(10);
  AddCommonOptions(diff, d.get());
  std::function<void()> diff_finish = AddAnalyzeOptions(diff, d.get(), /*diff=*/true);
  diff->add_option("--db", d->db,
                   "Run history that runs named as A or B (id, latest~N) are found in (default: "
                   "$TRAINPROF_DB, else runs/trainprof.db); a diff itself is not recorded");
  diff->callback([d, b_path, run, diff_finish] {
    diff_finish();
    *run = [d, b_path] { return RunDiff(*d, *b_path); };
  });
}

}  // namespace trainprof::cli
