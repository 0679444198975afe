#include "base/atomic_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <utility>
#include <vector>

namespace trainprof::base {

Status ErrnoStatus(const std::string& what, int err) {
  std::string msg = fmt::format("{}: {}", what, std::strerror(err));
  switch (err) {
    case ENOENT:
      return NotFound(msg);
    case EACCES:
    case EPERM:
    case EROFS:
      return PermissionDenied(msg);
    default:
      return InvalidArgument(msg);
  }
}

namespace {

std::mutex in_place_mu;
std::vector<std::string> in_place;  // the InPlaceFolders', each with a '/' at its end

bool WrittenInPlace(const std::string& path) {
  std::lock_guard<std::mutex> lock(in_place_mu);
  return std::ranges::any_of(in_place, [&](const std::string& f) { return path.starts_with(f); });
}

}  // namespace

InPlaceFolder::InPlaceFolder(std::string folder) : folder_(std::move(folder) + "/") {
  std::lock_guard<std::mutex> lock(in_place_mu);
  in_place.push_back(folder_);
}

InPlaceFolder::~InPlaceFolder() {
  std::lock_guard<std::mutex> lock(in_place_mu);
  in_place.erase(std::ranges::find(in_place, folder_));
}

AtomicFile::~AtomicFile() { Discard(); }

Status AtomicFile::Open(const std::string& path) {
  Discard();
  path_ = path;
  // The pid keeps processes apart, the count the writers of one process: two threads writing
  // one path must not share a temporary file (the rename of the second found it gone).
  static std::atomic<uint64_t> opened{0};
  tmp_path_ = WrittenInPlace(path) ? path : fmt::format("{}.tmp.{}.{}", path, getpid(), opened++);
  file_ = std::fopen(tmp_path_.c_str(), "wb");
  if (file_ == nullptr) return ErrnoStatus(fmt::format("cannot write {}", path), errno);
  static constexpr size_t kBuf = 1 << 20;
  std::setvbuf(file_, nullptr, _IOFBF, kBuf);
  write_failed_ = false;
  return Status::Ok();
}

void AtomicFile::Write(std::string_view data) {
  if (file_ == nullptr || data.empty()) return;
  if (std::fwrite(data.data(), 1, data.size(), file_) != data.size()) write_failed_ = true;
}

Status AtomicFile::Commit() {
  if (file_ == nullptr) return InternalError(fmt::format("{}: not open", path_));
  bool failed = write_failed_ || std::fflush(file_) != 0;
  int err = errno;
  if (std::fclose(file_) != 0 && !failed) {
    failed = true;
    err = errno;
  }
  file_ = nullptr;
  if (failed) {
    std::remove(tmp_path_.c_str());
    return ErrnoStatus(fmt::format("cannot write {}", path_), err);
  }
  if (tmp_path_ != path_ && std::rename(tmp_path_.c_str(), path_.c_str()) != 0) {
    err = errno;
    std::remove(tmp_path_.c_str());
    return ErrnoStatus(fmt::format("cannot rename {} to {}", tmp_path_, path_), err);
  }
  return Status::Ok();
}

void AtomicFile::Discard() {
  if (file_ != nullptr) {
    std::fclose(file_);
    file_ = nullptr;
    std::remove(tmp_path_.c_str());
  }
}

Status WriteFileAtomically(const std::string& path, std::string_view data) {
  AtomicFile f;
  TRAINPROF_RETURN_IF_ERROR(f.Open(path));
  f.Write(data);
  return f.Commit();
}

std::string FileProblem(const std::string& path, int err) {
  namespace fs = std::filesystem;
  std::error_code ec;
  switch (err) {
    case ELOOP:
      return "a loop of symbolic links (one of them points back to itself)";
    case EISDIR:
      return "a folder, not a file";
    case ENOENT:
      if (fs::is_symlink(fs::symlink_status(path, ec))) {
        return fmt::format("a symbolic link to {}, which does not exist",
                           fs::read_symlink(path, ec).string());
      }
      return "no such file";
    case EACCES:
      return "permission denied";
    default:
      return std::strerror(err);
  }
}

StatusOr<std::string> ReadFile(const std::string& path, std::string_view what) {
  auto fail = [&](int err) {
    Status s = ErrnoStatus("", err);
    return Status(s.code(),
                  fmt::format("cannot read {} {}: {}", what, path, FileProblem(path, err)));
  };
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail(errno);
  struct stat st {};
  if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    close(fd);
    return fail(EISDIR);
  }
  std::string out;
  char buf[65536];
  while (true) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n == 0) break;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      close(fd);
      return fail(err);
    }
    out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return out;
}

}  // namespace trainprof::base
