#include "base/child_process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>

namespace trainprof::base {
namespace {

std::atomic<pid_t> g_child{-1};
std::atomic<int> g_last_signal{0};
struct sigaction g_old_int, g_old_term;

void OnSignal(int sig, siginfo_t* info, void*) {
  const int saved_errno = errno;  // kill() may set it under the interrupted code's feet
  g_last_signal.store(sig);
  // From the terminal (SI_KERNEL) the child got it too, through the foreground process group.
  const bool sent_by_someone = info == nullptr || info->si_code <= 0;
  const pid_t child = g_child.load();
  if (sent_by_someone && child > 0) kill(child, sig);
  errno = saved_errno;
}

// In the child, after fork: exec, or report errno through `fd` and exit.
[[noreturn]] void ExecChild(const std::vector<std::string>& argv,
                            const std::vector<std::pair<std::string, std::string>>& env, int fd) {
  for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execvp(args[0], args.data());
  const int err = errno;
  (void)!write(fd, &err, sizeof(err));
  _exit(err == ENOENT ? 127 : 126);
}

}  // namespace

StatusOr<ChildProcess> ChildProcess::Start(
    const std::vector<std::string>& argv,
    const std::vector<std::pair<std::string, std::string>>& env) {
  if (argv.empty() || argv[0].empty()) return InvalidArgument("no command to run");
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return InternalError(fmt::format("cannot start {}: pipe: {}", argv[0], std::strerror(errno)));
  }
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return InternalError(fmt::format("cannot start {}: fork: {}", argv[0], std::strerror(errno)));
  }
  if (pid == 0) {
    close(fds[0]);
    ExecChild(argv, env, fds[1]);
  }
  close(fds[1]);
  int err = 0;
  ssize_t n;
  do {
    n = read(fds[0], &err, sizeof(err));
  } while (n < 0 && errno == EINTR);
  close(fds[0]);
  if (n == sizeof(err)) {  // exec failed: reap the child, say why
    waitpid(pid, nullptr, 0);
    if (err == ENOENT) return NotFound(fmt::format("{}: command not found", argv[0]));
    return PermissionDenied(fmt::format("{}: cannot run: {}", argv[0], std::strerror(err)));
  }
  return ChildProcess(pid);
}

void ChildProcess::ForwardSignals(const ChildProcess* child) {
  g_child.store(child->pid_);
  struct sigaction sa {};
  sa.sa_sigaction = OnSignal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &g_old_int);
  sigaction(SIGTERM, &sa, &g_old_term);
}

void ChildProcess::RestoreSignals() {
  g_child.store(-1);
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
}

int ChildProcess::LastSignal() { return g_last_signal.load(); }

void ChildProcess::WaitUntilEnded() {
  siginfo_t info{};
  while (waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOWAIT) < 0) {
    if (errno != EINTR) return;
  }
}

int ChildProcess::Wait() {
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0) {
    if (errno != EINTR) return 1;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) {
    term_signal_ = WTERMSIG(status);
    return 128 + term_signal_;
  }
  return 1;
}

int ExitCodeForStartError(const Status& s) { return s.code() == StatusCode::kNotFound ? 127 : 126; }

}  // namespace trainprof::base
