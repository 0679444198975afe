// The subcommands of the trainprof command. Each registers its options on the CLI11 app and
// returns the process exit code when run.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "report/report.h"
#include "trainprof/options.h"
#include "trainprof/status.h"

namespace trainprof::cli {

// Exit codes, also listed in `trainprof --help`.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;    // failed while running or writing outputs
inline constexpr int kExitBadInput = 2;   // bad command line, config or dataset
inline constexpr int kExitNoOutput = 3;   // the run folder cannot be created
inline constexpr int kExitDataError = 4;  // analyze: the input has an error-severity diagnostic
// A run stopped by a signal exits with 128 + the signal number (130 for Ctrl-C, 143 for
// SIGTERM), after writing the reports of the steps it completed.

inline constexpr const char* kExitCodesHelp =
    "Exit codes:\n"
    "  0    success\n"
    "  1    failure while running or writing the reports\n"
    "  2    bad input: command line, config file, dataset\n"
    "  3    the run folder cannot be created or written\n"
    "  4    analyze: the input has a data error (a trace cut short); reports written\n"
    "  130  stopped by Ctrl-C (SIGINT), 143 by SIGTERM: reports of the completed steps written\n";

inline constexpr const char* kProfileDescription =
    "Train the built-in LibTorch job (the PyTorch profiler tutorial's CNN on Fashion-MNIST)\n"
    "under the profiler and print the time and speed reports. With no option it runs the\n"
    "embedded default config (configs/default.yaml in the source tree).";

// -o/--output-dir: the output folder, under one name in every command. The old spelling --out is
// accepted (hidden) with a warning on stderr.
CLI::Option* AddOutputDirOption(CLI::App* sub, std::string* dir, const std::string& help);
// -o/--output-dir (default "runs"), --run-dir and --overwrite of a command that writes one run
// folder from traces (analyze, merge).
void AddRunFolderOptions(CLI::App* sub, Options::Output* out);

// "trainprof: MESSAGE" on stderr.
void PrintError(const Status& s);
// The exit code of a failed lookup: 1 when the history could not be read (locked, I/O), else 2.
int ExitFor(const Status& s);

// Whether `app` has a command of that name.
bool HasSubcommand(const CLI::App& app, std::string_view name);
// A first word that is not an option and not a command: one line naming the nearest command,
// and kExitBadInput; else 0.
int CheckSubcommand(const CLI::App& app, int argc, char** argv);

// "Exit codes:\n  0    success\n ...": the codes one command can return, for its --help.
std::string ExitCodesHelp(const std::vector<std::pair<int, std::string>>& codes);
inline constexpr const char* kExitSignal =
    "stopped by Ctrl-C (SIGINT), 143 by SIGTERM: reports of the completed steps written";

// The `trainprof` binary leaves LibTorch and MPI out, so `analyze`, `diff` and `dataset` start
// in milliseconds (Open MPI's libraries alone took 2 ms of every start); `profile` runs in
// `trainprof-profile` (with LibTorch) and `analyze --mpi` in `trainprof-mpi` (with Open MPI, no
// LibTorch: 100 MB less a process), both next to it, which this execs. `what` names the
// command in the error. Returns only on failure, with the exit code.
int ExecSibling(char** argv, const char* binary, const char* what);

// Registers `profile`; *run is set to the function that runs it.
void AddProfileCommand(CLI::App& app, std::function<int()>* run);
// Registers `analyze` and `diff`.
void AddAnalyzeCommand(CLI::App& app, std::function<int()>* run);
// Registers `merge DIR...`: the report from `analyze --summary-only`'s rank summaries.
void AddMergeCommand(CLI::App& app, std::function<int()>* run);
// --db: the run history a command records into (`records`) or reads.
void AddDbOption(CLI::App* sub, std::string* db, bool records);
// Registers `runs list`, `runs show` and `compare`.
void AddHistoryCommands(CLI::App& app, std::function<int()>* run);
// --mlflow, --mlflow-experiment and --tensorboard: the exporters of output.* (analyze, merge,
// export).
void AddExportOptions(CLI::App* sub, Options::Output* out);
// Registers `mcp`: the Model Context Protocol server on stdio.
void AddMcpCommand(CLI::App& app, std::function<int()>* run);
void AddWatchCommand(CLI::App& app, std::function<int()>* run);
// Registers `export RUN_DIR`.
void AddExportCommand(CLI::App& app, std::function<int()>* run);
// Registers `gate`: the CI form of compare --fail-if (exit 0 pass, 1 regression, 2 undecided).
void AddGateCommand(CLI::App& app, std::function<int()>* run);
// Registers `runs noise` under `runs`.
void AddRunsNoiseCommand(CLI::App* runs, std::function<int()>* run);
// Adds a finished run to the run history (--db flag, $TRAINPROF_DB, runs/trainprof.db; "off":
// none). Prints why on failure and returns kExitFailure; the run's files are untouched.
int RecordRun(const report::Report& r, const std::string& dir, const std::string& db_flag,
              bool quiet);
// The same for a run folder's report.json; `quiet`: no "Recorded as run" line.
int RecordRunFolder(const std::string& dir, const std::string& db_flag, bool quiet = false);
// Registers `run -- COMMAND`. main() hands it the words after "--" (SetRunCommand), so the
// command's own options never meet trainprof's parser; without "--" the command starts at the
// first word that is not an option of run.
void AddRunCommand(CLI::App& app, std::function<int()>* run);
void SetRunCommand(std::vector<std::string> command);
// For `trainprof run`: when every word before the first "--" is an option of run (or its
// value), hands the words after it to SetRunCommand and returns the count of arguments left
// for the parser; otherwise (the command began earlier, and the "--" is its own) returns argc.
int SplitRunCommand(int argc, char** argv);
// Registers `dataset export-png` and `dataset export-packed`.
void AddDatasetCommand(CLI::App& app, std::function<int()>* run);

}  // namespace trainprof::cli
