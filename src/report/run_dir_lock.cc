#include "report/run_dir_lock.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>

#include "base/atomic_file.h"

namespace trainprof::report {
namespace {

namespace fs = std::filesystem;

constexpr const char* kLockName = ".trainprof.lock";

// Locks held by this process, by canonical folder; the descriptors stay open until exit.
std::mutex g_mu;
std::map<std::string, int>& HeldLocks() {
  static auto* held = new std::map<std::string, int>();
  return *held;
}

bool IsRunFile(const fs::path& p) {
  const std::string name = p.filename().string(), ext = p.extension().string();
  return name == "report.json" || name == "report.html" || name == "trace.json" ||
         name == "summary.txt" || ext == ".csv" || ext == ".txt" || name == kLockName;
}

bool IsRunSubfolder(const fs::path& p) {
  const std::string name = p.filename().string();
  auto numbered = [&](std::string_view prefix) {
    return name.size() > prefix.size() && name.starts_with(prefix) &&
           name.find_first_not_of("0123456789", prefix.size()) == std::string::npos;
  };
  return name == "session" || numbered("rank") || numbered("run");
}

// Removes the files an earlier run wrote into `dir`, and its rank / session / run subfolders.
Status RemoveRunFiles(const fs::path& dir, bool keep_lock) {
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const fs::path& p = e.path();
    if (keep_lock && p.filename() == kLockName) continue;
    if (e.is_directory(ec) && !e.is_symlink(ec) && IsRunSubfolder(p)) {
      TRAINPROF_RETURN_IF_ERROR(RemoveRunFiles(p, false));
      fs::remove(p, ec);  // left in place when it holds files of its own
      continue;
    }
    if (!e.is_regular_file(ec) || !IsRunFile(p)) continue;
    if (!fs::remove(p, ec) || ec) {
      return base::ErrnoStatus(
          fmt::format("--overwrite: cannot remove {} of the earlier run", p.string()), ec.value());
    }
  }
  if (ec)
    return base::ErrnoStatus(fmt::format("cannot list run folder {}", dir.string()), ec.value());
  return Status::Ok();
}

bool HoldsRun(const fs::path& dir) {
  std::error_code ec;
  for (const char* f : {"report.json", "summary.txt", "trace.json"})
    if (fs::exists(dir / f, ec)) return true;
  return false;
}

std::string PidIn(int fd) {
  char buf[32] = {};
  const ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
  std::string pid(buf, n > 0 ? static_cast<size_t>(n) : 0);
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
  return pid.empty() ? "unknown" : pid;
}

// Opens and locks the lock file; *existed tells whether an earlier run left it.
StatusOr<int> Lock(const fs::path& dir, bool* existed) {
  const std::string path = (dir / kLockName).string();
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  *existed = fd < 0 && errno == EEXIST;
  if (*existed) fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return base::ErrnoStatus(fmt::format("cannot create {}", path), errno);
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    const std::string pid = PidIn(fd);
    close(fd);
    if (err == EWOULDBLOCK) {
      return FailedPrecondition(fmt::format(
          "run folder {} is being written by another trainprof process (pid {}); wait for it to "
          "finish, or choose another folder",
          dir.string(), pid));
    }
    return base::ErrnoStatus(fmt::format("cannot lock {}", path), err);
  }
  const std::string pid = fmt::format("{}\n", getpid());
  if (ftruncate(fd, 0) != 0 || pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    // The pid is only for the other process's message; the lock itself holds.
  }
  return fd;
}

}  // namespace

Status ClaimRunDir(const std::string& dir, bool overwrite, bool fresh) {
  std::error_code ec;
  const fs::path canonical = fs::weakly_canonical(dir, ec);
  const std::string key = ec ? dir : canonical.string();
  std::lock_guard<std::mutex> lock(g_mu);
  const bool held = HeldLocks().contains(key);
  bool existed = held;
  if (!held) {
    TRAINPROF_ASSIGN_OR_RETURN(int fd, Lock(dir, &existed));
    HeldLocks().emplace(key, fd);
  }
  if (fresh || !(existed || HoldsRun(dir))) return Status::Ok();
  if (!overwrite) {
    if (!held) {
      close(HeldLocks()[key]);
      HeldLocks().erase(key);
    }
    return FailedPrecondition(fmt::format(
        "run folder {} holds an earlier run; --overwrite (output.overwrite: true) removes its "
        "files first, or choose another folder",
        dir));
  }
  return RemoveRunFiles(dir, /*keep_lock=*/true);
}

bool HoldsEarlierRun(const std::string& dir) {
  std::error_code ec;
  return fs::exists(fs::path(dir) / ".trainprof.lock", ec) || HoldsRun(dir);
}

void ReleaseRunDir(const std::string& dir) {
  std::error_code ec;
  const fs::path canonical = fs::weakly_canonical(dir, ec);
  const std::string key = ec ? dir : canonical.string();
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = HeldLocks().find(key);
  if (it == HeldLocks().end()) return;
  close(it->second);
  HeldLocks().erase(it);
}

}  // namespace trainprof::report
