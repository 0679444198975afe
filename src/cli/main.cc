// trainprof: why is my training slow, or out of memory, and what to do about it.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <exception>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/commands.h"
#include "cli/ranks.h"
#include "trainprof/version.h"

#ifdef TRAINPROF_LIGHT_MAIN
#include <limits.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>

int trainprof::cli::ExecSibling(char** argv, const char* binary, const char* what) {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  std::string path = n > 0 ? std::string(self, static_cast<size_t>(n)) : std::string(argv[0]);
  path = path.substr(0, path.find_last_of('/') + 1) + binary;
  execv(path.c_str(), argv);
  const int error = errno;
  fmt::print(stderr, "trainprof: {} runs in {}, which cannot be started: {}\n", what, path,
             std::strerror(error));
  if (error == ENOENT) {
    fmt::print(
        stderr,
        "trainprof: it is built by CMake where {} is found (README); the pip package "
        "does not have it\n",
        std::string_view(binary) == "trainprof-mpi" ? "Open MPI (libopenmpi-dev)" : "LibTorch");
  }
  return trainprof::cli::kExitFailure;
}

#if TRAINPROF_MPI_BINARY && !defined(TRAINPROF_MPI_MAIN)
namespace {

// Whether argv is `analyze ... --mpi ...`, which runs in trainprof-mpi (it links MPI).
bool IsMpiAnalyze(int argc, char** argv) {
  if (argc < 2 || std::string_view(argv[1]) != "analyze") return false;
  for (int i = 2; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--") return false;
    if (a == "--mpi" || a.starts_with("--mpi=")) return true;
  }
  return false;
}

}  // namespace
#endif  // TRAINPROF_MPI_MAIN
#endif

namespace {

// The commands, in groups, until the group that has `word` (argv[1]) is added: every group's
// options, checks and help texts cost each start of `trainprof analyze` 1.2 ms of its 10 (`perf
// stat`, a missing path). `trainprof --help`, a misspelt command and no command get them all.
void AddCommands(CLI::App& app, std::function<int()>* run, std::string_view word) {
  using Add = void (*)(CLI::App&, std::function<int()>*);
  static constexpr Add kGroups[] = {
      trainprof::cli::AddAnalyzeCommand,  trainprof::cli::AddMergeCommand,
      trainprof::cli::AddHistoryCommands, trainprof::cli::AddGateCommand,
      trainprof::cli::AddExportCommand,   trainprof::cli::AddDatasetCommand,
      trainprof::cli::AddRunCommand,      trainprof::cli::AddMcpCommand,
      trainprof::cli::AddWatchCommand,
  };
  for (Add add : kGroups) {
    add(app, run);
    if (!word.empty() && word[0] != '-' && trainprof::cli::HasSubcommand(app, word)) return;
  }
}

}  // namespace

int main(int argc, char** argv) {
#ifdef TRAINPROF_LIGHT_MAIN
  if (argc > 1 && std::string_view(argv[1]) == "profile")
    return trainprof::cli::ExecSibling(argv, "trainprof-profile", "profile");
#if TRAINPROF_MPI_BINARY && !defined(TRAINPROF_MPI_MAIN)
  if (IsMpiAnalyze(argc, argv))
    return trainprof::cli::ExecSibling(argv, "trainprof-mpi", "analyze --mpi");
#endif
#endif
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
#ifdef TRAINPROF_LIGHT_MAIN
    app.add_subcommand("profile",
                       trainprof::cli::kProfileDescription);  // runs in trainprof-profile
#else
    trainprof::cli::AddProfileCommand(app, &run);
#endif
    AddCommands(app, &run, argc > 1 ? argv[1] : "");
    // `trainprof run [options] -- COMMAND ...`: what follows "--" is the command, untouched.
    const int parsed_argc = trainprof::cli::SplitRunCommand(argc, argv);
    if (int code = trainprof::cli::CheckSubcommand(app, argc, argv); code != 0) return code;
    try {
      app.parse(parsed_argc, argv);
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
