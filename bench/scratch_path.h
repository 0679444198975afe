// A file or folder of one benchmark program's run in the temp folder: named after the process,
// so runs side by side do not share it, and removed when the object goes (a function-local
// static: when the program exits), so repeated runs leave nothing behind.
#pragma once

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <string_view>

namespace trainprof::bench {

class ScratchPath {
 public:
  explicit ScratchPath(std::string_view name)
      : path_((std::filesystem::temp_directory_path() /
               fmt::format("trainprof-bench-{}-{}", getpid(), name))
                  .string()) {}
  ~ScratchPath() {
    std::error_code ec;  // nothing to do when it was never written
    std::filesystem::remove_all(path_, ec);
  }
  ScratchPath(const ScratchPath&) = delete;
  ScratchPath& operator=(const ScratchPath&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace trainprof::bench
