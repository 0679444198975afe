#include "base/subprocess.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

extern char** environ;

namespace trainprof::base {

StatusOr<std::string> RunAndCapture(const std::vector<std::string>& argv, const std::string& cwd) {
  if (argv.empty()) return InvalidArgument("RunAndCapture: no program");
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0) return InternalError(std::strerror(errno));
  if (pipe2(err, O_CLOEXEC) != 0) {
    close(out[0]), close(out[1]);
    return InternalError(std::strerror(errno));
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, cwd.c_str());
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(out[1]);
  close(err[1]);
  std::string text, errors;
  if (rc == 0) {
    pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
    int open = 2;
    char buf[16384];
    while (open > 0) {
      if (poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        break;
      }
      for (int i = 0; i < 2; ++i) {
        if (fds[i].fd < 0 || fds[i].revents == 0) continue;
        ssize_t n = read(fds[i].fd, buf, sizeof(buf));
        if (n > 0) {
          (i == 0 ? text : errors).append(buf, static_cast<size_t>(n));
        } else if (n == 0 || errno != EINTR) {
          fds[i].fd = -1;
          --open;
        }
      }
    }
  }
  close(out[0]);
  close(err[0]);
  if (rc != 0) return NotFound(fmt::format("{} cannot be started: {}", argv[0], std::strerror(rc)));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    const std::string first = errors.substr(0, errors.find('\n'));
    // posix_spawnp reports a missing program as exit 127 of the child on some systems.
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && first.empty())
      return NotFound(fmt::format("{} cannot be started", argv[0]));
    return FailedPrecondition(
        fmt::format("{} failed{}{}", argv[0], first.empty() ? "" : ": ", first));
  }
  return text;
}

}  // namespace trainprof::base
