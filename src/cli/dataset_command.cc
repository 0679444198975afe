// `trainprof dataset export-png | export-packed`: writes Fashion-MNIST in the layouts the
// training job's data.format reads, to reproduce the PyTorch profiler tutorial's data-loading
// experiment (one small file per sample versus one packed file).
#include <fmt/format.h>

#include <string>

#include "base/progress.h"
#include "cli/commands.h"
#include "jobs/dataset_formats.h"

namespace trainprof::cli {
namespace {

struct DatasetFlags {
  std::string out, from = jobs::kFashionMnistDir, split = "all", progress = "auto";
  int64_t limit = 0;
  bool png = true;
};

int RunExport(const DatasetFlags& f) {
  const char* what = f.png ? "export-png" : "export-packed";
  if (f.out.empty()) {
    fmt::print(stderr, "trainprof dataset {}: error: -o/--output-dir is required\n", what);
    return kExitBadInput;
  }
  std::vector<jobs::Split> splits;
  if (f.split != "test") splits.push_back(jobs::Split::kTrain);
  if (f.split != "train") splits.push_back(jobs::Split::kTest);
  base::Progress progress(f.progress);
  int64_t written = 0;
  for (jobs::Split split : splits) {
    auto d = jobs::LoadFashionMnist(f.from, split);
    if (!d.ok()) {
      fmt::print(stderr, "trainprof dataset {}: error: {}\n", what, d.status().ToString());
      return kExitBadInput;
    }
    if (f.limit > 0 && f.limit < d->count) {
      d->count = f.limit;
      d->images.resize(static_cast<size_t>(f.limit * d->rows * d->cols));
      d->labels.resize(static_cast<size_t>(f.limit));
    }
    progress.Begin(fmt::format("{} {}", what, jobs::SplitName(split)), d->count);
    auto tick = [&](int64_t done, int64_t) { progress.Update(done, ""); };
    Status s = f.png ? jobs::ExportPng(*d, f.out, split, tick)
                     : jobs::ExportPacked(*d, f.out, split, tick);
    progress.End();
    if (!s.ok()) {
      fmt::print(stderr, "trainprof dataset {}: error: {}\n", what, s.ToString());
      return kExitFailure;
    }
    written += d->count;
  }
  fmt::print(
      "wrote {} samples to {} ({}); train with:\n  trainprof profile --set "
      "data.format={} --set data.dir={}\n",
      written, f.out,
      f.png ? "one PNG per sample + labels.csv per split" : "train.packed, test.packed",
      f.png ? "png_dir" : "packed", f.out);
  return kExitOk;
}

}  // namespace

void AddDatasetCommand(CLI::App& app, std::function<int()>* run) {
  CLI::App* cmd = app.add_subcommand(
      "dataset",
      "Write Fashion-MNIST in the layouts `trainprof profile` can read (data.format), to\n"
      "measure what the data layout costs, as in the PyTorch profiler tutorial.");
  cmd->require_subcommand(1);
  for (bool png : {true, false}) {
    auto flags = std::make_shared<DatasetFlags>();
    flags->png = png;
    CLI::App* sub = cmd->add_subcommand(
        png ? "export-png" : "export-packed",
        png ? "One PNG file per sample plus labels.csv (\"file,label\"), in <out>/train and\n"
              "<out>/test: the one-small-file-per-sample layout (data.format: png_dir)."
            : "One uncompressed file of fixed-size records per split, <out>/train.packed and\n"
              "<out>/test.packed, memory-mapped by the job (data.format: packed).");
    AddOutputDirOption(sub, &flags->out, "Output folder (created if missing; required)");
    sub->add_option("--from", flags->from,
                    "Folder of the Fashion-MNIST IDX .gz files (Debian: dataset-fashion-mnist)")
        ->capture_default_str();
    sub->add_option("--split", flags->split, "Which split to write")
        ->check(CLI::IsMember({"train", "test", "all"}))
        ->capture_default_str();
    sub->add_option("--limit", flags->limit,
                    "Write only the first N samples of each split (N >= 1; default: all)")
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
    sub->add_option("--progress", flags->progress, "Progress display on stderr")
        ->check(CLI::IsMember({"auto", "bar", "lines", "off"}))
        ->capture_default_str();
    sub->footer(ExitCodesHelp({{kExitOk, "written"},
                               {kExitFailure, "a file could not be written"},
                               {kExitBadInput,
                                "bad input: an option, or the source dataset "
                                "cannot be read"}}));
    sub->callback([flags, run] { *run = [flags] { return RunExport(*flags); }; });
  }
}

}  // namespace trainprof::cli
