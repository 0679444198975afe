// Files written whole or not at all: the data goes to "<path>.tmp.<pid>.<n>" (n counts the files
// this process opened) and is renamed over <path> on Commit(), so a crash never leaves a
// half-written report, and two writers of one path never share a temporary file. Inside a
// folder that is itself put in place whole (InPlaceFolder), straight to <path>.
//
//   base::AtomicFile f;
//   TRAINPROF_RETURN_IF_ERROR(f.Open("run/report.json"));
//   f.Write(text);
//   TRAINPROF_RETURN_IF_ERROR(f.Commit());   // the destructor discards an uncommitted file
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

#include "trainprof/status.h"

namespace trainprof::base {

class AtomicFile {
 public:
  AtomicFile() = default;
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();

  // Errors: the folder does not exist or is not writable (message names the path).
  Status Open(const std::string& path);
  // Buffered; a write error is kept and returned by Commit().
  void Write(std::string_view data);
  // Flushes, closes and renames over the final path. Errors name the path.
  Status Commit();
  // Removes the temporary file.
  void Discard();
  FILE* file() { return file_; }

 private:
  std::string path_;
  std::string tmp_path_;
  FILE* file_ = nullptr;
  bool write_failed_ = false;
};

// While one lives, files below `folder` are written in place, not through a temporary file
// and a rename: for a folder that is put in place whole once written (a run folder is written
// as "<run>.partial-..." and renamed), which nothing reads before. A run's 44 files took 88
// renames, each under the folder's lock that the two writing threads share. A file that fails
// is removed, as its temporary file would be.
class InPlaceFolder {
 public:
  explicit InPlaceFolder(std::string folder);
  ~InPlaceFolder();
  InPlaceFolder(const InPlaceFolder&) = delete;
  InPlaceFolder& operator=(const InPlaceFolder&) = delete;

 private:
  std::string folder_;
};

// Writes `data` to `path` atomically.
Status WriteFileAtomically(const std::string& path, std::string_view data);

// Reads a whole file. Errors: "cannot read <what> <path>: <why>", NotFound / PermissionDenied /
// InvalidArgument, the why in words (FileProblem()).
StatusOr<std::string> ReadFile(const std::string& path, std::string_view what = "file");

// Why `path` could not be opened, given the errno: "no such file", "a loop of symbolic links",
// "a symbolic link to x.yaml, which does not exist", "a folder, not a file", or strerror.
std::string FileProblem(const std::string& path, int err);

// "path: <strerror(err)>" as a Status of a fitting code.
Status ErrnoStatus(const std::string& what, int err);

}  // namespace trainprof::base
