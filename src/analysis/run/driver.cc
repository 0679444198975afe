#include "analysis/run/driver.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <mutex>
#include <optional>

#include "analysis/analyze.h"
#include "analysis/diff.h"
#include "analysis/ranks/cross_rank_path.h"
#include "analysis/ranks/detail_store.h"
#include "analysis/ranks/digest.h"
#include "analysis/run/snapshot_run.h"
#include "analysis/sections/sections.h"
#include "report/data_quality.h"
#include "trace/process_merge.h"

namespace trainprof::analysis {
namespace {

bool IsFolder(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_directory(path, ec);
}

std::string RunNames(const trace::TraceListing& listing) {
  std::string names;
  for (const trace::TraceRun& run : listing.runs)
    names += fmt::format("{}{}", names.empty() ? "" : ", ", run.dir);
  return names;
}

// A trace with no event, or no step with anything in it, has no answer: the one-line error, or
// "" when there is something to analyse.
std::string NothingToAnalyse(const Summaries& s, const std::string& what) {
  size_t events = 0, steps = 0;
  for (const RankInfo& m : s.ranks) events += m.size();
  for (const RankAnalysis& a : s.analyses) steps += a.steps.steps.size();
  if (events == 0) {
    return fmt::format(
        "{}: nothing to analyse: the trace holds no events (was the profiler "
        "stopped before its first active step?)",
        what);
  }
  if (steps == 0) {
    return fmt::format("{}: nothing to analyse: no step with events was kept{}", what,
                       s.options.steps == StepsMode::kComplete
                           ? " (every step lacks its GPU work; --steps all keeps them)"
                           : "");
  }
  return "";
}

// Every section, the files read (meta files.N), the entries skipped (input_skipped
// diagnostics) and the data-quality section. Many ranks' tables read `s` as they are written.
report::Report BuildRunReport(const Summaries& s, std::shared_ptr<const RanksMatched> matched,
                              const RunInputs& in, const std::vector<std::string>& skipped) {
  const std::vector<std::string>& files = in.files;
  report::Report r = BuildAnalyzeReport(
      s.ranks, s.analyses, s.options, s.input, /*stream_rank_tables=*/true,
      in.step_range ? ReportViews::kAcrossRanks : ReportViews::kAll, std::move(matched));
  if (in.step_range)
    r.AddMeta("step_range", fmt::format("{}-{}", in.step_range->first, in.step_range->second));
  // A line a file, and room for the lines the run folder adds (StampMeta, run_dir): no
  // doubling's slack (100,000 files: 8 MB of meta lines, not 16).
  constexpr size_t kLinesAddedOnWrite = 8;
  r.meta.reserve(r.meta.size() + files.size() + kLinesAddedOnWrite);
  for (size_t i = 0; i < files.size(); ++i) r.AddMeta(fmt::format("files.{}", i), files[i], false);
  for (const std::string& why : skipped)
    r.diagnostics.push_back({report::DiagnosticId::kInputSkipped, 1, why});
  report::AddDataQualitySection(r);
  return r;
}

trace::ReadManyOptions ReadOptionsOf(const AnalyzeRequest& r, const RunHooks& hooks) {
  trace::ReadManyOptions ro;
  ro.threads = r.threads;
  ro.progress = hooks.progress;
  ro.cancelled = hooks.cancelled;
  ro.claim = hooks.claim;
  ro.capture_traces = r.capture_traces;
  return ro;
}

// Each summary cut to in.step_range. Errors: no rank has a step in it.
Status KeepStepRange(RankResults& all, const RunInputs& in) {
  // Not a structured binding: clang 14 (the sanitizer build) cannot capture one in a lambda.
  const int64_t first = in.step_range->first, last = in.step_range->second;
  size_t with = 0;
  for (size_t i = 0; i < all.size(); ++i)
    all.WithSummary(i, [&](RankSummary& s) { with += WindowSummary(s, first, last) > 0; });
  if (with > 0 || all.size() == 0) return Status::Ok();
  return InvalidArgument(
      fmt::format("{}: no rank has a step numbered {} to {}", in.input, first, last));
}

}  // namespace

RunInputs InputsOfListedRun(trace::TraceListing& listing, size_t run, const std::string& path) {
  RunInputs in;
  in.files = std::move(listing.runs[run].files);
  // A path this process does not see at all has its files from other processes' listings (under
  // --mpi, traces on other nodes' disks): a folder there, read as one.
  std::error_code ec;
  in.skip_unreadable = IsFolder(path) || !std::filesystem::exists(path, ec);
  if (in.skip_unreadable) in.skipped = listing.skipped;
  in.input = listing.runs[run].dir;
  in.what =
      in.files.size() == 1 ? in.files[0] : fmt::format("{} ({} files)", path, in.files.size());
  return in;
}

namespace {

// The run of the memory snapshots `path` is or holds: one is the run, several are an error that
// names them.
StatusOr<RunInputs> SnapshotInputs(const std::string& path, std::vector<std::string> snapshots,
                                   const std::string& one_run_why) {
  if (snapshots.size() > 1) {
    return InvalidArgument(fmt::format(
        "{}: holds {} memory snapshots ({}); {}: name one of them (`trainprof analyze {}` "
        "writes a report for each)",
        path, snapshots.size(), fmt::join(snapshots, ", "), one_run_why, path));
  }
  RunInputs in;
  in.kind = trace::InputKind::kMemorySnapshot;
  in.files = std::move(snapshots);
  in.input = in.what = in.files[0];
  return in;
}

}  // namespace

StatusOr<RunInputs> InputsOfOneRun(const std::vector<std::string>& paths,
                                   const std::string& one_run_why) {
  if (paths.empty())
    return InvalidArgument("no trace given: name a trace file or a folder of traces");
  if (paths.size() == 1 && trace::IsMemorySnapshot(paths[0]))
    return SnapshotInputs(paths[0], paths, one_run_why);
  RunInputs in;
  for (const std::string& path : paths) {
    StatusOr<trace::TraceListing> listed = trace::ListTraceRuns(path);
    TRAINPROF_ASSIGN_OR_RETURN(trace::TraceListing listing, std::move(listed));
    if (listing.runs.empty()) {  // a folder of memory snapshots only, as the CLI reads it
      if (paths.size() == 1) return SnapshotInputs(path, std::move(listing.snapshots), one_run_why);
      return InvalidArgument(fmt::format(
          "{}: holds memory snapshots only ({}); a snapshot is a report of its own: name it alone",
          path, fmt::join(listing.snapshots, ", ")));
    }
    if (listing.runs.size() > 1) {
      return InvalidArgument(
          fmt::format("{}: holds the traces of {} runs ({}); {}: name one of "
                      "those folders",
                      path, listing.runs.size(), RunNames(listing), one_run_why));
    }
    if (IsFolder(path)) in.skip_unreadable = true;
    for (std::string& f : listing.runs[0].files) in.files.push_back(std::move(f));
    for (std::string& s : listing.skipped) in.skipped.push_back(std::move(s));
  }
  const size_t n = in.files.size();
  if (paths.size() == 1) {
    in.what = n == 1 ? in.files[0] : fmt::format("{} ({} files)", paths[0], n);
    in.input = paths[0];
  } else {
    in.what = in.input = fmt::format("{} files", n);
  }
  return in;
}

RankResults SummariseFiles(const std::vector<std::string>& files, const AnalyzeRequest& r,
                           const std::string& input, const RunHooks& hooks) {
  AnalyzeOptions o = ToOptions(r);
  o.split_lone_rank = LoneRankHasSpareCore(files.size(), r.threads);
  RankResults results(hooks.take ? 0 : files.size());
  const bool compact = files.size() > kInlineRanks && !hooks.take;
  // Many ranks: each summary's per-rank detail waits in a scratch file (ranks/detail_store.h).
  const std::shared_ptr<DetailStore> detail = compact ? DetailStore::Open() : nullptr;
  std::mutex taking;  // hooks.take is called one result at a time
  auto keep = [&](size_t i, StatusOr<RankSummary> result) {
    if (!hooks.take) return results.Set(i, std::move(result));
    std::lock_guard<std::mutex> lock(taking);
    hooks.take(i, std::move(result));
  };
  trace::ForEachTraceFile(files, ReadOptionsOf(r, hooks),
                          [&](size_t i, StatusOr<trace::TraceModel> m) {
                            if (!m.ok()) return keep(i, m.status());
                            RankSummary s = SummariseRank(*m, o, input);
                            if (hooks.model) hooks.model(i, *m, s);
                            if (compact) KeepUntilReport(detail, s);  // many ranks
                            keep(i, std::move(s));
                          });
  return results;
}

ReadRunResult::ReadRunResult() : summaries(std::make_unique<RankResults>()) {}
ReadRunResult::ReadRunResult(ReadRunResult&&) noexcept = default;
ReadRunResult& ReadRunResult::operator=(ReadRunResult&&) noexcept = default;
ReadRunResult::~ReadRunResult() = default;

RunResult::RunResult() : summaries(std::make_unique<Summaries>()) {}
RunResult::~RunResult() = default;

report::ExtrasFor RunResult::Extras() const { return RunExtras(*summaries, matched); }

void RunResult::LetDetailGoOnceWritten() const { RetireDetailOnceWritten(summaries->analyses); }

LoadedRun::LoadedRun() = default;
LoadedRun::LoadedRun(LoadedRun&&) noexcept = default;
LoadedRun& LoadedRun::operator=(LoadedRun&&) noexcept = default;
LoadedRun::~LoadedRun() = default;

StatusOr<ReadRunResult> KeepRun(const RunInputs& in, RankResults results) {
  ReadRunResult out;
  out.skipped = in.skipped;
  Status first = Status::Ok();
  size_t read = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    const Status& r = results.status(i);
    if (r.ok()) {
      ++read;
      continue;
    }
    if (!in.skip_unreadable) return r;
    if (first.ok()) first = r;
    out.skipped.push_back(fmt::format("{} (file skipped)", r.message()));
  }
  if (read == 0 && !first.ok()) return first;
  results.CutFailed();  // in place: each summary stays where it was made
  *out.summaries = std::move(results);
  return out;
}

StatusOr<ReadRunResult> ReadRun(const RunInputs& in, const AnalyzeRequest& r,
                                const RunHooks& hooks) {
  return KeepRun(in, SummariseFiles(in.files, r, in.input, hooks));
}

StatusOr<std::unique_ptr<RunResult>> ReportRun(ReadRunResult read, RunInputs in) {
  RankResults& rows = *read.summaries;
  if (in.step_range) TRAINPROF_RETURN_IF_ERROR(KeepStepRange(rows, in));
  if (rows.size() <= kInlineRanks)  // every view reads a few ranks' detail
    for (size_t i = 0; i < rows.size(); ++i) Unspill(rows.analysis(i));
  TRAINPROF_ASSIGN_OR_RETURN(Summaries all, CombineSummaries(std::move(rows), in.input));
  const size_t n = in.files.size();
  const std::string what = !in.what.empty() ? in.what
                           : n == 1         ? in.files[0]
                                            : fmt::format("{} ({} files)", all.input, n);
  if (std::string why = NothingToAnalyse(all, what); !why.empty()) return InvalidArgument(why);
  auto out = std::make_unique<RunResult>();
  *out->summaries = std::move(all);
  // Built in place: with many ranks its tables read out->summaries as they are written.
  out->matched = MatchRanks(out->summaries->ranks, out->summaries->analyses);
  out->report = BuildRunReport(*out->summaries, out->matched, in, read.skipped);
  out->files = std::move(in.files);
  return out;
}

StatusOr<std::unique_ptr<RunResult>> AnalyzeRun(const RunInputs& in, const AnalyzeRequest& r,
                                                const RunHooks& hooks) {
  if (in.kind == trace::InputKind::kMemorySnapshot) {
    auto out = std::make_unique<RunResult>();
    TRAINPROF_ASSIGN_OR_RETURN(out->report, SnapshotReport(in.files.at(0), r));
    out->files = in.files;
    return out;
  }
  TRAINPROF_ASSIGN_OR_RETURN(ReadRunResult read, ReadRun(in, r, hooks));
  return ReportRun(std::move(read), in);
}

StatusOr<LoadedRun> LoadRun(const RunInputs& in, const AnalyzeRequest& r, const RunHooks& hooks,
                            bool merge_processes, std::vector<std::string>* skipped) {
  std::vector<std::string> unused;
  if (skipped == nullptr) skipped = &unused;
  *skipped = in.skipped;
  LoadedRun l;
  l.files = in.files;
  trace::ReadManyOptions ro = ReadOptionsOf(r, hooks);
  if (in.skip_unreadable) ro.skipped = skipped;
  TRAINPROF_ASSIGN_OR_RETURN(l.models, trace::ReadTraceFiles(in.files, ro));
  // tensorboard_trace_handler writes a file per profiling cycle: one process's are one rank.
  if (merge_processes) l.models = trace::MergeFilesOfOneProcess(std::move(l.models));
  l.analyses = AnalyzeAll(l.models, ToOptions(r));
  return l;
}

namespace {

bool EitherIsSnapshot(const RunInputs& a, const RunInputs& b) {
  return trace::IsMemorySnapshotKind(a.kind) || trace::IsMemorySnapshotKind(b.kind);
}

void AddCut(const LoadedRun& run, std::vector<std::string>* cut) {
  for (const trace::TraceModel& m : run.models)
    if (m.truncated && cut != nullptr) cut->push_back(m.path);
}

}  // namespace

std::vector<int64_t> ClockOffsetsByFile(const LoadedRun& run) {
  const CollectivesResult c = MatchCollectives(run.models);
  if (c.collectives.empty() || MatchDoubtful(c)) return {};
  std::vector<int64_t> out(run.files.size(), 0);
  for (size_t m = 0; m < run.models.size() && m < c.offsets.size(); ++m) {
    auto it = std::ranges::find(run.files, run.models[m].path);
    if (it != run.files.end())
      out[static_cast<size_t>(it - run.files.begin())] = c.offsets[m].offset_ns;
  }
  return out;
}

Status CheckDiffPair(const RunInputs& a, const RunInputs& b) {
  if (EitherIsSnapshot(a, b) && (a.files.size() != 1 || b.files.size() != 1))
    return InvalidArgument("diff: a memory snapshot is compared with one other snapshot");
  return Status::Ok();
}

StatusOr<report::Report> DiffRun(const RunInputs& a, const RunInputs& b, const AnalyzeRequest& r,
                                 const RunHooks& ha, const RunHooks& hb,
                                 std::vector<std::string>* cut) {
  TRAINPROF_RETURN_IF_ERROR(CheckDiffPair(a, b));
  if (EitherIsSnapshot(a, b)) return SnapshotDiffReport(a.files[0], b.files[0], r);
  TRAINPROF_ASSIGN_OR_RETURN(LoadedRun la, LoadRun(a, r, ha));
  TRAINPROF_ASSIGN_OR_RETURN(LoadedRun lb, LoadRun(b, r, hb));
  AddCut(la, cut);
  AddCut(lb, cut);
  return BuildDiffReport({a.input, &la.models, &la.analyses}, {b.input, &lb.models, &lb.analyses},
                         r.top_kernels);
}

LoadedRun AnalyzeModels(std::vector<trace::TraceModel> models, const AnalyzeRequest& r) {
  LoadedRun l;
  for (const trace::TraceModel& m : models) l.files.push_back(m.path);
  l.models = std::move(models);
  l.analyses = AnalyzeAll(l.models, ToOptions(r));
  return l;
}

bool AdoptTraceSections(const LoadedRun& run, const AnalyzeRequest& r, const std::string& label,
                        const std::string& title_prefix, report::Report& into,
                        const std::vector<std::string>& also_skip) {
  report::Report from = ReportOfLoaded(run, r, label);
  std::erase_if(from.sections, [](const report::Section& s) { return !s.no_data.empty(); });
  std::vector<std::string> skip = {"operator_view", "recommendations", "data_quality"};
  skip.insert(skip.end(), also_skip.begin(), also_skip.end());
  report::AdoptSections(into, std::move(from),
                        {.skip = std::move(skip),
                         .id_prefix = "trace_",
                         .title_prefix = title_prefix,
                         .diagnostics = false});
  return std::ranges::any_of(run.models, [](const trace::TraceModel& m) {
    return std::ranges::any_of(m.kind, trace::IsGpuKind);
  });
}

report::Report ReportOfLoaded(const LoadedRun& run, const AnalyzeRequest& r,
                              const std::string& label) {
  return BuildAnalyzeReport(run.models, run.analyses, ToOptions(r), label);
}

}  // namespace trainprof::analysis
