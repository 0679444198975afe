// `trainprof merge DIR... [-o OUT]`: the report of ranks summarised separately (`analyze
// --summary-only`, one job of a Slurm array per rank, say), the same report `analyze` writes
// when it reads every file at once.
#include <fmt/format.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>

#include "analysis/rank_summary.h"
#include "analysis/ranks/digest.h"
#include "analysis/run/driver.h"
#include "base/atomic_file.h"
#include "base/parallel.h"
#include "cli/analyze_run.h"
#include "cli/commands.h"
#include "trace/input_kind.h"

namespace trainprof::cli {
namespace {

namespace fs = std::filesystem;

// Summaries and digests are told by their bytes (the input list, trace/input_kind.h), never
// by their names.
bool IsSummaryKind(trace::InputKind k) {
  return k == trace::InputKind::kRankSummary || k == trace::InputKind::kRankDigest;
}

// A summary or digest file, with its kind as the listing sniffed it (read once, not again).
struct SummaryFile {
  std::string path;
  trace::InputKind kind;
  bool operator<(const SummaryFile& o) const { return path < o.path; }
};

// The .tpsum and digest files of the arguments: a file as is, a folder's (not recursing), sorted
// per folder.
StatusOr<std::vector<SummaryFile>> ListSummaryFiles(const std::vector<std::string>& paths) {
  std::vector<SummaryFile> out;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (!fs::is_directory(p, ec)) {
      if (!fs::exists(p, ec)) return InvalidArgument(fmt::format("{}: no such file or folder", p));
      const trace::InputKind k = trace::SniffInput(p);
      if (!IsSummaryKind(k)) {
        const trace::InputFormat* f = trace::FindInputFormat(k);
        return InvalidArgument(
            fmt::format("{}: {}, not a rank summary or digest (`trainprof analyze` reads traces)",
                        p, f != nullptr ? "a " + std::string(f->name) : "no kind trainprof reads"));
      }
      out.push_back({p, k});
      continue;
    }
    std::vector<SummaryFile> here;
    for (const fs::directory_entry& e : fs::directory_iterator(p, ec)) {
      if (!e.is_regular_file(ec)) continue;
      const trace::InputKind k = trace::SniffInput(e.path().string());
      if (IsSummaryKind(k)) here.push_back({e.path().string(), k});
    }
    if (ec) return InvalidArgument(fmt::format("{}: {}", p, ec.message()));
    if (here.empty()) {
      return InvalidArgument(
          fmt::format("{}: no rank summary (*{}) or digest (*{}) in this folder; `trainprof "
                      "analyze PATH --summary-only -o {}` or `--digest {}` writes them",
                      p, analysis::kSummaryExtension, analysis::kDigestSuffix, p, p));
    }
    std::sort(here.begin(), here.end());
    out.insert(out.end(), here.begin(), here.end());
  }
  return out;
}

StatusOr<analysis::RankSummary> ReadOne(const SummaryFile& file, analysis::DigestPart part) {
  if (file.kind == trace::InputKind::kRankDigest) return analysis::ReadDigest(file.path, part);
  TRAINPROF_ASSIGN_OR_RETURN(std::string bytes, base::ReadFile(file.path, "rank summary"));
  StatusOr<analysis::RankSummary> s = analysis::DecodeSummary(bytes);
  if (!s.ok()) return InvalidArgument(fmt::format("{}: {}", file.path, s.status().message()));
  return s;
}

// In parallel (10,000 digests in about 1.5 s on two cores, most of it SQLite opening each file);
// the first error, in file order, is the result's.
StatusOr<analysis::RankResults> ReadSummaries(const std::vector<SummaryFile>& files,
                                              analysis::DigestPart part) {
  analysis::RankResults read(files.size());
  base::ParallelFor(files.size(), 0, [&](size_t i) { read.Set(i, ReadOne(files[i], part)); });
  for (size_t i = 0; i < read.size(); ++i)
    if (!read.status(i).ok()) return read.status(i);
  return read;
}

// "10-19" -> (10, 19); "12" -> (12, 12). Errors: anything else, or first > last.
StatusOr<std::pair<int64_t, int64_t>> ParseStepRange(const std::string& v) {
  int64_t a = 0, b = 0;
  char rest = 0;
  const int n = std::sscanf(v.c_str(), "%" SCNd64 "-%" SCNd64 "%c", &a, &b, &rest);
  if (n == 1 && v.find('-') == std::string::npos) b = a;
  if ((n != 1 && n != 2) || (n == 1 && b != a) || a < 0 || b < a)
    return InvalidArgument(
        fmt::format("--step-range {}: expected FIRST-LAST step numbers, as 10-19", v));
  return std::make_pair(a, b);
}

int RunMerge(AnalyzeFlags& f, const std::vector<std::string>& dirs, const std::string& step_range) {
  auto files = ListSummaryFiles(dirs);
  StatusOr<analysis::RankResults> summaries =
      files.ok() ? ReadSummaries(*files, step_range.empty() ? analysis::DigestPart::kWhole
                                                            : analysis::DigestPart::kAcrossRanks)
                 : StatusOr<analysis::RankResults>(files.status());
  if (!summaries.ok()) {
    fmt::print(stderr, "trainprof: {}\n", summaries.status().message());
    return kExitBadInput;
  }
  analysis::RunInputs in;
  if (!step_range.empty()) {
    auto range = ParseStepRange(step_range);
    if (!range.ok()) {
      fmt::print(stderr, "trainprof: {}\n", range.status().message());
      return kExitBadInput;
    }
    in.step_range = *range;
  }
  for (size_t i = 0; i < summaries->size(); ++i) in.files.push_back(summaries->info(i).path);
  std::sort(in.files.begin(), in.files.end());
  // The summaries' own input when they agree (CombineSummaries), else the folders given; the
  // error names (in.what) follow from it.
  in.input = fmt::format("{}", fmt::join(dirs, ", "));
  analysis::ReadRunResult read;
  *read.summaries = std::move(*summaries);
  auto run = analysis::ReportRun(std::move(read), std::move(in));
  if (!run.ok()) {
    fmt::print(stderr, "trainprof: {}\n", run.status().message());
    return kExitBadInput;
  }
  return EmitRun(**run, f, f.out, nullptr);
}

}  // namespace

void AddMergeCommand(CLI::App& app, std::function<int()>* run) {
  auto f = std::make_shared<AnalyzeFlags>();
  f->out.name = "analyze";
  auto dirs = std::make_shared<std::vector<std::string>>();
  auto step_range = std::make_shared<std::string>();
  CLI::App* sub = app.add_subcommand(
      "merge",
      "Build the multi-rank report from rank summaries written by `analyze --summary-only` "
      "or digests written by `analyze --digest`: the same report as analysing every trace at "
      "once, or, with --step-range, the questions across ranks asked of other steps");
  sub->footer(
      "DIR is a folder of *.tpsum or *.digest.sqlite files (or one such file); give several to "
      "merge ranks summarised on different machines. The options of the analysis (--steps, "
      "--hta-compat, ...) are those the summaries were made with, and must agree.\nExamples:\n"
      "  trainprof analyze traces/ --summary-only -o sums/\n"
      "  trainprof merge sums/ -o runs/\n"
      "  trainprof analyze traces/ --digest dig/\n"
      "  trainprof merge dig/ --step-range 10-19   # the straggler, its cause and the critical\n"
      "                                            # path across ranks over steps 10 to 19\n" +
      ExitCodesHelp({{kExitOk, "merged; reports written and the run recorded"},
                     {kExitFailure, "the run could not be recorded in the run history"},
                     {kExitBadInput, "bad input: no summary, a corrupt one, options that differ"},
                     {kExitNoOutput, "the run folder cannot be created or written"},
                     {kExitDataError,
                      "the input has a data error (a trace cut short); reports "
                      "written (--allow-data-errors: exit 0)"}}));
  sub->add_option("dir", *dirs, "Folders of rank summaries (*.tpsum) or digests (*.digest.sqlite)")
      ->required();
  sub->add_option("--step-range", *step_range,
                  "FIRST-LAST: only the steps so numbered (ProfilerStep#N); the report then holds "
                  "the overview, the distributed view, the critical path across ranks and the "
                  "straggler, the views a step window answers")
      ->type_name("A-B");
  sub->add_option("--format", f->format, "text: the report on the terminal; json: report.json")
      ->check(CLI::IsMember({"text", "json"}))
      ->default_val("text");
  AddRunFolderOptions(sub, &f->out);
  AddDbOption(sub, &f->db, /*records=*/true);
  sub->add_flag("--allow-data-errors", f->allow_data_errors,
                "Exit 0 even when a diagnostic of error severity fired");
  sub->callback([f, dirs, step_range, run] {
    *run = [f, dirs, step_range] { return RunMerge(*f, *dirs, *step_range); };
  });
}

}  // namespace trainprof::cli
