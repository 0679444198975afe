// trainprof: why is my training slow, or out of memory, and what to do about it.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <exception>
#include <functional>

#include "cli/commands.h"
#include "cli/ranks.h"
#include "trainprof/version.h"

int main(int argc, char** argv) {
  try {
    CLI::App app{
        "trainprof " TRAINPROF_VERSION
        ": tells you why your deep-learning training is slow or runs out of memory.\n"
        "Reports use the names of the tools you know: Lightning's SimpleProfiler actions,\n"
        "anemoi-training's benchmark_profiler config keys, torch.profiler's schedule."};
    app.name("trainprof");
    app.footer(trainprof::cli::kExitCodesHelp);
    app.require_subcommand(1);
    app.set_version_flag("--version", "trainprof " TRAINPROF_VERSION);
    trainprof::cli::SetProgramArgs(argc, argv);
    std::function<int()> run;
    trainprof::cli::AddProfileCommand(app, &run);
    trainprof::cli::AddAnalyzeCommand(app, &run);
    trainprof::cli::AddDatasetCommand(app, &run);
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      int code = app.exit(e);
      return code == 0 ? 0 : trainprof::cli::kExitBadInput;
    }
    return run ? run() : trainprof::cli::kExitBadInput;
  } catch (const std::exception& e) {
    fmt::print(stderr, "trainprof: internal error: {}\n", e.what());
    return trainprof::cli::kExitFailure;
  }
}
