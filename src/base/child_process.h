// Runs a command as `trainprof run` does: in this terminal, folder and environment (plus the
// variables given), standard input passed through; SIGINT and SIGTERM sent to trainprof are
// forwarded to it, and its exit status is reported as a shell reports it.
//
//   auto child = base::ChildProcess::Start({"python3", "train.py"}, {{"TRAINPROF_RUN_DIR", d}});
//   if (!child.ok()) ...;                 // exit 127 (not found) or 126 (cannot run)
//   base::ChildProcess::ForwardSignals(&*child);
//   int status = child->Wait();           // 0..255, 128 + N when killed by signal N
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

#include "trainprof/status.h"

namespace trainprof::base {

class ChildProcess {
 public:
  // Forks and execs argv[0] (looked up on PATH when it has no '/'). Errors: NotFound (the
  // shell's 127: no such command), PermissionDenied (126: found but cannot be run: not
  // executable, a folder, a bad binary), InternalError (fork failed); the message is one line.
  static StatusOr<ChildProcess> Start(const std::vector<std::string>& argv,
                                      const std::vector<std::pair<std::string, std::string>>& env);

  // Forwards SIGINT and SIGTERM that someone sends to this process (kill, a scheduler) to the
  // child. Ctrl-C on the terminal already reaches the child through its process group, so a
  // signal from the terminal is not sent twice. (A signal sent by another program to the whole
  // process group, `kill -INT -PGID`, cannot be told from one sent to this process alone, and
  // reaches the child twice.) This process itself stays alive to write the
  // reports. Call once; the handlers stay until RestoreSignals().
  static void ForwardSignals(const ChildProcess* child);
  static void RestoreSignals();
  // The last signal forwarded or received from the terminal (0: none).
  static int LastSignal();

  // Waits until the child has ended but leaves it unreaped (a zombie whose /proc entry still
  // has its CPU times), so a last sample can read it; Wait() then reaps it.
  void WaitUntilEnded();
  // Waits for the child to end and reaps it: its exit code, or 128 + the signal that killed it.
  int Wait();
  pid_t pid() const { return pid_; }
  // The signal that ended the child (after Wait()), 0 when it exited by itself: exit(200) and
  // signal 72 both give 200 from Wait().
  int term_signal() const { return term_signal_; }

 private:
  explicit ChildProcess(pid_t pid) : pid_(pid) {}
  pid_t pid_ = -1;
  int term_signal_ = 0;
};

// The exit code of a failed Start(): 127 for NotFound, 126 otherwise.
int ExitCodeForStartError(const Status& s);

}  // namespace trainprof::base
