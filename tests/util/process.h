// Runs a program for end-to-end tests and captures its exit code, stdout and stderr.
//
//   testutil::ProcessResult r = testutil::RunProcess({TRAINPROF_CLI, "--help"});
//   EXPECT_EQ(r.exit_code, 0);
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace trainprof::testutil {

struct ProcessResult {
  int exit_code = -1;  // 128 + signal when killed by a signal
  std::string out, err;
};

ProcessResult RunProcess(const std::vector<std::string>& argv);

// The full path of the executable `name` in a folder of $PATH, "" when there is none.
std::string FindOnPath(const std::string& name);

// A running child whose stderr can be read line by line (for signal tests).
class Child {
 public:
  explicit Child(const std::vector<std::string>& argv);
  ~Child();
  // Reads stderr until a line containing `text` appears (true) or the child closes it (false).
  bool WaitForStderr(const std::string& text, std::string* line);
  void Signal(int sig);
  // Waits for the exit; drains the pipes. Returns the ProcessResult.
  ProcessResult Wait();

 private:
  pid_t pid_ = -1;
  int out_fd_ = -1, err_fd_ = -1;
  std::string out_, err_;
  size_t err_scanned_ = 0;
};

}  // namespace trainprof::testutil
