#include "util/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <sstream>

namespace trainprof::testutil {
namespace {

bool ReadSome(int fd, std::string& into) {
  char buf[65536];
  ssize_t n = read(fd, buf, sizeof(buf));
  if (n > 0) {
    into.append(buf, static_cast<size_t>(n));
    return true;
  }
  return n < 0 && errno == EINTR;
}

}  // namespace

Child::Child(const std::vector<std::string>& argv) {
  int out[2], err[2];
  if (pipe(out) != 0 || pipe(err) != 0) return;
  pid_ = fork();
  if (pid_ == 0) {
    dup2(out[1], 1);
    dup2(err[1], 2);
    close(out[0]);
    close(err[0]);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  out_fd_ = out[0];
  err_fd_ = err[0];
}

Child::~Child() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    Wait();
  }
}

bool Child::WaitForStderr(const std::string& text, std::string* line) {
  while (true) {
    size_t found = err_.find(text, err_scanned_);
    if (found != std::string::npos) {
      size_t begin = err_.rfind('\n', found);
      begin = begin == std::string::npos ? 0 : begin + 1;
      size_t end = err_.find('\n', found);
      if (end != std::string::npos) {
        if (line != nullptr) *line = err_.substr(begin, end - begin);
        err_scanned_ = end;
        return true;
      }
    }
    pollfd p[2] = {{err_fd_, POLLIN, 0}, {out_fd_, POLLIN, 0}};
    if (poll(p, 2, 60000) <= 0) return false;
    if (p[1].revents & POLLIN) ReadSome(out_fd_, out_);
    if (p[0].revents & (POLLIN | POLLHUP)) {
      if (!ReadSome(err_fd_, err_)) return false;
    }
  }
}

void Child::Signal(int sig) {
  if (pid_ > 0) kill(pid_, sig);
}

ProcessResult Child::Wait() {
  ProcessResult r;
  bool out_open = out_fd_ >= 0, err_open = err_fd_ >= 0;
  while (out_open || err_open) {
    pollfd p[2] = {{out_open ? out_fd_ : -1, POLLIN, 0}, {err_open ? err_fd_ : -1, POLLIN, 0}};
    if (poll(p, 2, -1) < 0 && errno != EINTR) break;
    if (out_open && (p[0].revents & (POLLIN | POLLHUP)) && !ReadSome(out_fd_, out_)) {
      out_open = false;
      close(out_fd_);
    }
    if (err_open && (p[1].revents & (POLLIN | POLLHUP)) && !ReadSome(err_fd_, err_)) {
      err_open = false;
      close(err_fd_);
    }
  }
  out_fd_ = err_fd_ = -1;
  int status = 0;
  if (pid_ > 0 && waitpid(pid_, &status, 0) == pid_) {
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  pid_ = -1;
  r.out = out_;
  r.err = err_;
  return r;
}

ProcessResult RunProcess(const std::vector<std::string>& argv) { return Child(argv).Wait(); }

std::string FindOnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (dir.empty()) continue;
    const std::string p = dir + "/" + name;
    if (access(p.c_str(), X_OK) == 0) return p;
  }
  return "";
}

}  // namespace trainprof::testutil
