// WriteRunFolder: a report's run folder written whole or not at all (run_writers.h).
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>

#include "base/atomic_file.h"
#include "base/text.h"
#include "report/run_dir_lock.h"
#include "report/run_folder.h"
#include "report/run_meta.h"
#include "report/run_writers.h"

namespace trainprof::report {
namespace {

namespace fs = std::filesystem;

// The folder the run is to have: output.run_dir as given, else a new <dir>/<UTC time>-<name>[-N],
// created empty so that no other run takes its name.
StatusOr<std::string> FinalFolder(const Options::Output& out, int64_t unix_ns) {
  std::error_code ec;
  if (!out.run_dir.empty()) {
    std::string dir = out.run_dir;
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();  // "runs/x/" is "runs/x"
    if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
      return InvalidArgument(fmt::format("run folder {}: exists and is not a folder", dir));
    return dir;
  }
  fs::create_directories(out.dir, ec);
  if (ec) {
    return base::ErrnoStatus(fmt::format("cannot create output folder {} (output.dir)", out.dir),
                             ec.value());
  }
  const std::string stem = fmt::format("{}/{}-{}", out.dir, base::UtcCompact(unix_ns), out.name);
  for (int i = 1; i < 1000; ++i) {
    std::string dir = i == 1 ? stem : fmt::format("{}-{}", stem, i);
    if (fs::create_directory(dir, ec)) return dir;
    if (ec) {
      return base::ErrnoStatus(fmt::format("cannot create run folder {} (output.dir)", dir),
                               ec.value());
    }
  }
  return InvalidArgument(
      fmt::format("cannot create run folder {}: 999 folders of that name", stem));
}

bool IsEmptyFolder(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec) && fs::is_empty(p, ec);
}

// Puts the written folder `partial` in place at `final`: renamed onto it when `final` is missing
// or empty (at once); else (an earlier run's folder, claimed with `overwrite`, its run's files
// removed) each entry moved into it. Errors name the folder.
Status PutInPlace(const fs::path& partial, const fs::path& final, bool overwrite) {
  std::error_code ec;
  if (!fs::exists(final, ec) || IsEmptyFolder(final)) {
    fs::create_directories(final.parent_path(), ec);
    fs::rename(partial, final, ec);
    if (!ec) return Status::Ok();
    return base::ErrnoStatus(fmt::format("run folder {}: cannot put it in place", final.string()),
                             ec.value());
  }
  TRAINPROF_RETURN_IF_ERROR(ClaimRunDir(final.string(), overwrite, /*fresh=*/false));
  struct Release {  // the folder is let go however the moving ends
    const fs::path& dir;
    ~Release() { ReleaseRunDir(dir.string()); }
  } release{final};
  for (const fs::directory_entry& e : fs::directory_iterator(partial, ec)) {
    if (e.path().filename() == ".trainprof.lock") continue;
    fs::rename(e.path(), final / e.path().filename(), ec);
    if (ec) {
      return base::ErrnoStatus(fmt::format("run folder {}: cannot move {} into it", final.string(),
                                           e.path().filename().string()),
                               ec.value());
    }
  }
  fs::remove_all(partial, ec);
  return Status::Ok();
}

}  // namespace

StatusOr<std::string> WriteRunFolder(Report& r, const Options::Output& out, int64_t unix_ns,
                                     std::string* summary, const ExtrasFor& extras,
                                     Status* exported) {
  TRAINPROF_ASSIGN_OR_RETURN(const std::string final, FinalFolder(out, unix_ns));
  std::error_code ec;
  // An earlier run there is refused now, before any writing, unless it may be replaced.
  if (!out.overwrite && !out.run_dir.empty() && HoldsEarlierRun(final)) {
    return FailedPrecondition(fmt::format(
        "run folder {} holds an earlier run; --overwrite (output.overwrite: true) removes its "
        "files first, or choose another folder",
        final));
  }
  static std::atomic<int> writes{0};  // each write its own name
  const std::string partial = fmt::format("{}.partial-{}-{}", final, getpid(), ++writes);
  fs::remove_all(partial, ec);
  fs::create_directories(partial, ec);
  if (ec) {
    return base::ErrnoStatus(fmt::format("cannot create run folder {}", partial), ec.value());
  }
  Status st = ClaimRunDir(partial, false, /*fresh=*/true);
  StampMeta(r, unix_ns);
  r.AddMeta("run_dir", final);
  if (st.ok()) {
    const base::InPlaceFolder whole(partial);  // renamed into place whole, below
    st = WriteFolderFiles(r, partial, out, summary,
                          extras ? extras(partial) : std::vector<ExtraFile>{});
  }
  ReleaseRunDir(partial);  // written: its lock file goes with it, and marks a run
  if (st.ok()) st = PutInPlace(partial, final, out.overwrite);
  if (st.ok()) {
    Status e = RunExporters(r, final, out, *summary);
    if (exported != nullptr) *exported = std::move(e);
    return final;
  }
  fs::remove_all(partial, ec);
  if (out.run_dir.empty()) fs::remove(final, ec);  // the empty folder that held the name
  return st;
}

}  // namespace trainprof::report
