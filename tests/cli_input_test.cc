// A CLI that never silently ignores what it was given: out-of-range values, the output folder's
// one name, each command's own help, error wording, and run folders that are not written twice.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "util/golden.h"
#include "util/process.h"

namespace {

namespace testutil = trainprof::testutil;
namespace fs = std::filesystem;
using testutil::ProcessResult;
using testutil::RunProcess;
const std::string kCli = TRAINPROF_CLI;

std::string SmallTrace() { return testutil::SourceDir() + "/fuzz/corpus/kineto/kineto_small.json"; }

bool Has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

bool Empty(const std::string& dir) { return !fs::exists(dir) || fs::is_empty(dir); }

class CliInput : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testutil::FreshTempDir();
    setenv("TRAINPROF_DB", "off", 1);
  }
  void TearDown() override { unsetenv("TRAINPROF_DB"); }
  // `trainprof profile` with the flags given, writing below dir_/runs.
  ProcessResult Profile(std::vector<std::string> flags) {
    std::vector<std::string> argv = {kCli, "profile", "--no-progress", "-o", dir_ + "/runs"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    return RunProcess(argv);
  }
  std::string dir_;
};

TEST_F(CliInput, OutOfRangeFlagValuesAreErrorsNotDefaults) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--epochs", "0"}, "--epochs 0: training.epochs: 0 is out of range (1 to 100000)"},
      {{"--epochs", "-1"}, "--epochs -1: training.epochs: -1 is out of range (1 to 100000)"},
      {{"--epochs", "two"}, "--epochs two: training.epochs: expected an integer, got 'two'"},
      {{"--limit-train-batches", "-5"},
       "--limit-train-batches -5: training.limit_train_batches: -5 is out of range"},
  };
  for (const auto& [flags, message] : cases) {
    ProcessResult r = Profile(flags);
    EXPECT_EQ(r.exit_code, 2) << flags[0] << " " << flags[1] << ": " << r.err;
    EXPECT_TRUE(Has(r.err, message)) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  EXPECT_TRUE(Empty(dir_ + "/runs")) << "no run folder for bad input";
  ProcessResult limit = RunProcess(
      {kCli, "dataset", "export-png", "--limit", "-3", "-o", dir_ + "/png", "--progress", "off"});
  EXPECT_EQ(limit.exit_code, 2) << limit.err;
  EXPECT_TRUE(Has(limit.err, "--limit")) << limit.err;
  EXPECT_TRUE(Empty(dir_ + "/png"));
}

TEST_F(CliInput, TheOutputFolderHasOneNameAndTheOldOneWarns) {
  ProcessResult r = RunProcess({kCli, "analyze", SmallTrace(), "--out", dir_ + "/old"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.err, "trainprof analyze: warning: --out is the old name of -o/--output-dir"))
      << r.err;
  EXPECT_FALSE(Empty(dir_ + "/old"));
  ProcessResult n = RunProcess({kCli, "analyze", SmallTrace(), "-o", dir_ + "/new"});
  ASSERT_EQ(n.exit_code, 0) << n.err;
  EXPECT_FALSE(Has(n.err, "warning"));
  EXPECT_FALSE(Empty(dir_ + "/new"));
  for (const char* cmd : {"profile", "analyze", "diff", "run"}) {
    ProcessResult h = RunProcess({kCli, cmd, "--help"});
    EXPECT_TRUE(Has(h.out, "-o,--output-dir")) << cmd << ":\n" << h.out;
  }
  ProcessResult d = RunProcess({kCli, "dataset", "export-png", "--help"});
  EXPECT_TRUE(Has(d.out, "-o,--output-dir")) << d.out;
  EXPECT_FALSE(Has(d.out, "--out ")) << d.out;  // the old spelling works, but is not offered
}

TEST_F(CliInput, EachHelpListsItsOwnExitCodes) {
  ProcessResult dataset = RunProcess({kCli, "dataset", "export-png", "--help"});
  EXPECT_TRUE(Has(dataset.out, "Exit codes:\n  0    written\n  1    a file could not be written"))
      << dataset.out;
  for (const char* other : {"run folder", "130", "analyze", "  3 ", "  4 "})
    EXPECT_FALSE(Has(dataset.out, other)) << other << " in:\n" << dataset.out;
  ProcessResult analyze = RunProcess({kCli, "analyze", "--help"});
  EXPECT_TRUE(Has(analyze.out, "  4    the input has a data error")) << analyze.out;
  EXPECT_FALSE(Has(analyze.out, "Ctrl-C"));
  ProcessResult compare = RunProcess({kCli, "compare", "--help"});
  EXPECT_TRUE(Has(compare.out, "  1    a bound was crossed")) << compare.out;
  EXPECT_TRUE(Has(compare.out, "last:K"));
  EXPECT_FALSE(Has(compare.out, "training failed"));
  ProcessResult list = RunProcess({kCli, "runs", "list", "--help"});
  EXPECT_TRUE(Has(list.out, "--where fields: id, created_utc")) << list.out;
  ProcessResult show = RunProcess({kCli, "runs", "show", "--help"});
  EXPECT_FALSE(Has(show.out, "--where")) << show.out;  // show takes no --where
  ProcessResult profile = RunProcess({kCli, "profile", "--help"});
  EXPECT_TRUE(Has(profile.out, "  130  stopped by Ctrl-C")) << profile.out;
  EXPECT_TRUE(Has(profile.out, "--repeat"));
  EXPECT_FALSE(Has(profile.out, "  4 "));
}

// main() adds the command groups only up to the one argv[1] names: the last group's command
// still runs, and the top-level help, which names no command first, still lists every command.
TEST_F(CliInput, EveryCommandIsThereWhetherNamedOrNot) {
  ProcessResult help = RunProcess({kCli, "--help"});
  ASSERT_EQ(help.exit_code, 0) << help.err;
  for (const char* cmd : {"analyze", "diff", "merge", "runs", "compare", "gate", "export",
                          "dataset", "run", "mcp", "watch"}) {
    EXPECT_TRUE(Has(help.out, std::string("\n  ") + cmd + " ")) << cmd << " in:\n" << help.out;
    ProcessResult h = RunProcess({kCli, cmd, "--help"});
    EXPECT_EQ(h.exit_code, 0) << cmd << ": " << h.err;
    EXPECT_TRUE(Has(h.out, std::string("Usage: trainprof ") + cmd + " ")) << cmd << ":\n" << h.out;
  }
  ProcessResult watch = RunProcess({kCli, "watch", dir_ + "/no-such-run"});
  EXPECT_NE(watch.exit_code, 0);
  EXPECT_FALSE(Has(watch.err, "unknown command")) << watch.err;
}

TEST_F(CliInput, UnreadableConfigFilesSayWhatAndWhy) {
  fs::create_directories(dir_ + "/folder.yaml");
  fs::create_symlink("loop.yaml", dir_ + "/loop.yaml");
  fs::create_symlink("gone.yaml", dir_ + "/dangling.yaml");
  std::ofstream(dir_ + "/tab.yaml") << "training:\n\tepochs: 1\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"nope.yaml", "cannot read config file " + dir_ + "/nope.yaml: no such file"},
      {"folder.yaml", "cannot read config file " + dir_ + "/folder.yaml: a folder, not a file"},
      {"loop.yaml", "cannot read config file " + dir_ + "/loop.yaml: a loop of symbolic links"},
      {"dangling.yaml", "cannot read config file " + dir_ +
                            "/dangling.yaml: a symbolic link to gone.yaml, which does not exist"},
      {"tab.yaml", dir_ + "/tab.yaml:2:1: YAML syntax error: a tab in the indentation"},
  };
  for (const auto& [file, message] : cases) {
    ProcessResult r = Profile({"--config", dir_ + "/" + file});
    EXPECT_EQ(r.exit_code, 2) << file;
    EXPECT_TRUE(Has(r.err, message)) << r.err;
    EXPECT_FALSE(Has(r.err, "No such file")) << r.err;
  }
  ProcessResult trace = RunProcess({kCli, "analyze", dir_ + "/loop.yaml"});
  EXPECT_EQ(trace.exit_code, 2);
  EXPECT_TRUE(Has(trace.err, "loop.yaml: a loop of symbolic links")) << trace.err;
  EXPECT_FALSE(Has(trace.err, "no such file")) << trace.err;
}

TEST_F(CliInput, ARunFolderIsNotWrittenTwice) {
  const std::string run = dir_ + "/run";
  ASSERT_EQ(RunProcess({kCli, "analyze", SmallTrace(), "--run-dir", run}).exit_code, 0);
  std::ofstream(run + "/my-notes.md") << "mine";
  ProcessResult again = RunProcess({kCli, "analyze", SmallTrace(), "--run-dir", run});
  EXPECT_EQ(again.exit_code, 3);
  EXPECT_EQ(again.err, "trainprof: run folder " + run +
                           " holds an earlier run; --overwrite (output.overwrite: true) removes "
                           "its files first, or choose another folder\n");
  std::ofstream(run + "/stale.csv") << "from the earlier run";
  ProcessResult over = RunProcess({kCli, "analyze", SmallTrace(), "--run-dir", run, "--overwrite"});
  ASSERT_EQ(over.exit_code, 0) << over.err;
  EXPECT_FALSE(fs::exists(run + "/stale.csv"));  // the old run's files went first
  EXPECT_TRUE(fs::exists(run + "/report.json"));
  EXPECT_TRUE(fs::exists(run + "/my-notes.md"));  // what is not a run's file stays
}

TEST_F(CliInput, TwoWritersOfOneRunFolderAreRefusedByTheLock) {
  // This process holds the folder as a running trainprof does: an flock on its lock file.
  const std::string run = dir_ + "/busy";
  fs::create_directories(run);
  const int fd = open((run + "/.trainprof.lock").c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(flock(fd, LOCK_EX | LOCK_NB), 0);
  const std::string pid = std::to_string(getpid());
  ASSERT_EQ(write(fd, pid.data(), pid.size()), static_cast<ssize_t>(pid.size()));
  ProcessResult r = RunProcess({kCli, "analyze", SmallTrace(), "--run-dir", run, "--overwrite"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.err, "trainprof: run folder " + run +
                       " is being written by another trainprof process (pid " + pid +
                       "); wait for it to finish, or choose another folder\n");
  EXPECT_FALSE(fs::exists(run + "/report.json"));
  close(fd);
  ProcessResult after =
      RunProcess({kCli, "analyze", SmallTrace(), "--run-dir", run, "--overwrite"});
  EXPECT_EQ(after.exit_code, 0) << after.err;
}

TEST_F(CliInput, AMistypedCommandNamesTheNearestOne) {
  ProcessResult r = RunProcess({kCli, "analyse", "traces/"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("trainprof: unknown command 'analyse' (did you mean 'analyze'?); "
                        "commands: profile, analyze, ",
                        0),
            0u)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
}

// -q is one thing in every command: no progress, no status lines, no report; --no-progress is
// profile's progress switch alone.
TEST_F(CliInput, QuietMeansTheSameInProfileAndRun) {
#ifdef TRAINPROF_HAVE_TORCH  // profile trains the LibTorch job
  ProcessResult profile = Profile({"--epochs", "1", "--limit-train-batches", "3", "--set",
                                   "training.limit_val_batches=1", "-q"});
  ASSERT_EQ(profile.exit_code, 0) << profile.err;
  EXPECT_EQ(profile.out, "");
  EXPECT_EQ(profile.err, "");
#endif
  ProcessResult run =
      RunProcess({kCli, "run", "-q", "--run-dir", dir_ + "/run", "--", "/bin/true"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "");
  EXPECT_EQ(run.err, "");
}

}  // namespace
