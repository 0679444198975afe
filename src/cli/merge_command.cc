// `trainprof merge DIR... [-o OUT]`: the report of ranks summarised separately (`analyze
// --summary-only`, one job of a Slurm array per rank, say), the same report `analyze` writes
// when it reads every file at once.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <memory>

#include "analysis/rank_summary.h"
#include "analysis/run/driver.h"
#include "base/atomic_file.h"
#include "cli/analyze_run.h"
#include "cli/commands.h"

namespace trainprof::cli {
namespace {

namespace fs = std::filesystem;

// The .tpsum files of the arguments: a file as is, a folder's (not recursing), sorted per folder.
StatusOr<std::vector<std::string>> ListSummaryFiles(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (!fs::is_directory(p, ec)) {
      if (!fs::exists(p, ec)) return InvalidArgument(fmt::format("{}: no such file or folder", p));
      out.push_back(p);
      continue;
    }
    std::vector<std::string> here;
    for (const fs::directory_entry& e : fs::directory_iterator(p, ec))
      if (e.path().extension() == analysis::kSummaryExtension) here.push_back(e.path().string());
    if (ec) return InvalidArgument(fmt::format("{}: {}", p, ec.message()));
    if (here.empty()) {
      return InvalidArgument(
          fmt::format("{}: no rank summary (*{}) in this folder; `trainprof analyze "
                      "--summary-only PATH -o {}` writes them",
                      p, analysis::kSummaryExtension, p));
    }
    std::sort(here.begin(), here.end());
    out.insert(out.end(), here.begin(), here.end());
  }
  return out;
}

StatusOr<std::vector<analysis::RankSummary>> ReadSummaries(const std::vector<std::string>& files) {
  std::vector<analysis::RankSummary> out;
  for (const std::string& file : files) {
    TRAINPROF_ASSIGN_OR_RETURN(std::string bytes, base::ReadFile(file, "rank summary"));
    StatusOr<analysis::RankSummary> s = analysis::DecodeSummary(bytes);
    if (!s.ok()) return InvalidArgument(fmt::format("{}: {}", file, s.status().message()));
    out.push_back(std::move(*s));
  }
  return out;
}

int RunMerge(AnalyzeFlags& f, const std::vector<std::string>& dirs) {
  auto files = ListSummaryFiles(dirs);
  StatusOr<std::vector<analysis::RankSummary>> summaries =
      files.ok() ? ReadSummaries(*files)
                 : StatusOr<std::vector<analysis::RankSummary>>(files.status());
  if (!summaries.ok()) {
    fmt::print(stderr, "trainprof: {}\n", summaries.status().message());
    return kExitBadInput;
  }
  analysis::RunInputs in;
  for (const analysis::RankSummary& s : *summaries) in.files.push_back(s.info.path);
  std::sort(in.files.begin(), in.files.end());
  // The summaries' own input when they agree (CombineSummaries), else the folders given; the
  // error names (in.what) follow from it.
  in.input = fmt::format("{}", fmt::join(dirs, ", "));
  auto run = analysis::ReportRun({std::move(*summaries), {}}, in);
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
  CLI::App* sub = app.add_subcommand(
      "merge",
      "Build the multi-rank report from rank summaries written by `analyze --summary-only`: "
      "the same report as analysing every trace at once");
  sub->footer(
      "DIR is a folder of *.tpsum files (or one such file); give several to merge ranks "
      "summarised on different machines. The options of the analysis (--steps, --hta-compat, "
      "...) are those the summaries were made with, and must agree.\nExample:\n"
      "  trainprof analyze traces/ --summary-only -o sums/\n"
      "  trainprof merge sums/ -o runs/\n" +
      ExitCodesHelp({{kExitOk, "merged; reports written and the run recorded"},
                     {kExitFailure, "the run could not be recorded in the run history"},
                     {kExitBadInput, "bad input: no summary, a corrupt one, options that differ"},
                     {kExitNoOutput, "the run folder cannot be created or written"},
                     {kExitDataError,
                      "the input has a data error (a trace cut short); reports "
                      "written (--allow-data-errors: exit 0)"}}));
  sub->add_option("dir", *dirs, "Folders of rank summaries (*.tpsum)")->required();
  sub->add_option("--format", f->format, "text: the report on the terminal; json: report.json")
      ->check(CLI::IsMember({"text", "json"}))
      ->default_val("text");
  AddRunFolderOptions(sub, &f->out);
  AddDbOption(sub, &f->db, /*records=*/true);
  sub->add_flag("--allow-data-errors", f->allow_data_errors,
                "Exit 0 even when a diagnostic of error severity fired");
  sub->callback([f, dirs, run] { *run = [f, dirs] { return RunMerge(*f, *dirs); }; });
}

}  // namespace trainprof::cli
