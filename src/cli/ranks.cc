#include "cli/ranks.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <thread>

#include "cli/commands.h"

namespace trainprof::cli {
namespace {

std::vector<std::string>& Args() {
  static std::vector<std::string> args;
  return args;
}

volatile std::sig_atomic_t g_forward_signal = 0;
void OnForwardSignal(int sig) { g_forward_signal = sig; }

// A TCP port that was free a moment ago (the kernel's pick for port 0), as torchrun finds one.
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 29500;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof(a);
  int port = 29500;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  close(fd);
  return port;
}

std::string Describe(int status) {
  if (WIFSIGNALED(status)) {
    return fmt::format("was killed by signal {} ({})", WTERMSIG(status),
                       strsignal(WTERMSIG(status)));
  }
  return fmt::format("exited with code {}", WEXITSTATUS(status));
}

int ExitCode(int status) {
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

}  // namespace

void SetProgramArgs(int argc, char** argv) { Args().assign(argv, argv + argc); }

std::string SelfExe() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string("/proc/self/exe");
}
const std::vector<std::string>& ProgramArgs() { return Args(); }

int LaunchLocalRanks(int64_t n, double grace_s) {
  const int port = FreePort();
  std::vector<std::string> args = ProgramArgs();
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // The program's own path, not /proc/self/exe: the kernel would name every rank "exe".
  const std::string self = SelfExe();
  fmt::print(stderr, "trainprof profile: starting {} ranks (Gloo over 127.0.0.1:{})\n", n, port);
  std::fflush(stderr);
  std::fflush(stdout);

  struct sigaction sa {};
  sa.sa_handler = OnForwardSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGINT, SIG_IGN);  // the terminal sends Ctrl-C to every rank itself

  std::vector<pid_t> pids(static_cast<size_t>(n), -1);
  std::vector<int> status(static_cast<size_t>(n), 0);
  for (int64_t r = 0; r < n; ++r) {
    const pid_t pid = fork();
    if (pid == 0) {
      signal(SIGINT, SIG_DFL);
      signal(SIGTERM, SIG_DFL);
      setenv("RANK", std::to_string(r).c_str(), 1);
      setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
      setenv("WORLD_SIZE", std::to_string(n).c_str(), 1);
      setenv("LOCAL_WORLD_SIZE", std::to_string(n).c_str(), 1);
      setenv("MASTER_ADDR", "127.0.0.1", 1);
      setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
      execv(self.c_str(), argv.data());
      fmt::print(stderr, "trainprof profile: rank {}: cannot start: {}\n", r, strerror(errno));
      _exit(127);
    }
    if (pid < 0) {
      fmt::print(stderr, "trainprof profile: cannot start rank {}: {}\n", r, strerror(errno));
      for (pid_t p : pids) {
        if (p > 0) kill(p, SIGTERM);
      }
      n = r;
      break;
    }
    pids[static_cast<size_t>(r)] = pid;
  }

  using Clock = std::chrono::steady_clock;
  // When the ranks still running get killed: a grace period after the first failure.
  constexpr Clock::time_point kNever = Clock::time_point::max();
  Clock::time_point kill_at = kNever;
  int64_t running = n;
  while (running > 0) {
    if (g_forward_signal != 0) {
      for (int64_t r = 0; r < n; ++r) {
        if (pids[static_cast<size_t>(r)] > 0) kill(pids[static_cast<size_t>(r)], g_forward_signal);
      }
      g_forward_signal = 0;
    }
    int st = 0;
    const pid_t done = waitpid(-1, &st, WNOHANG);
    if (done <= 0) {
      if (Clock::now() > kill_at) {
        for (int64_t r = 0; r < n; ++r) {
          if (pids[static_cast<size_t>(r)] <= 0) continue;
          fmt::print(stderr,
                     "trainprof profile: rank {} (pid {}) still running {:g} s after a rank "
                     "failed: killing it\n",
                     r, pids[static_cast<size_t>(r)], grace_s);
          kill(pids[static_cast<size_t>(r)], SIGKILL);
        }
        kill_at = kNever;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    for (int64_t r = 0; r < n; ++r) {
      if (pids[static_cast<size_t>(r)] != done) continue;
      pids[static_cast<size_t>(r)] = -1;
      status[static_cast<size_t>(r)] = st;
      --running;
      if (ExitCode(st) != 0) {
        fmt::print(stderr, "trainprof profile: rank {} (pid {}) {}\n", r, done, Describe(st));
        if (kill_at == kNever)
          kill_at = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(grace_s * 1000));
      }
    }
  }
  for (int64_t r = 0; r < n; ++r) {
    if (ExitCode(status[static_cast<size_t>(r)]) != 0)
      return ExitCode(status[static_cast<size_t>(r)]);
  }
  return n > 0 ? kExitOk : kExitFailure;
}

}  // namespace trainprof::cli
