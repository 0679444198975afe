#include "report/run_folder.h"

#include <fmt/format.h>

#include <filesystem>
#include <sstream>

#include "base/atomic_file.h"
#include "base/text.h"
#include "report/csv.h"
#include "report/html.h"
#include "report/json.h"
#include "report/run_dir_lock.h"
#include "report/terminal.h"

namespace trainprof::report {

// Creates the run folder: output.run_dir as given, else <dir>/<UTC time>-<name>[-N].
StatusOr<std::string> CreateRunDir(const Options::Output& out, int64_t unix_ns) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!out.run_dir.empty()) {
    fs::create_directories(out.run_dir, ec);
    if (ec) {
      return base::ErrnoStatus(
          fmt::format("cannot create run folder {} (output.run_dir)", out.run_dir), ec.value());
    }
    TRAINPROF_RETURN_IF_ERROR(ClaimRunDir(out.run_dir, out.overwrite, /*fresh=*/false));
    return out.run_dir;
  }
  fs::create_directories(out.dir, ec);
  if (ec) {
    return base::ErrnoStatus(fmt::format("cannot create output folder {} (output.dir)", out.dir),
                             ec.value());
  }
  std::string stem = fmt::format("{}/{}-{}", out.dir, base::UtcCompact(unix_ns), out.name);
  for (int i = 1; i < 1000; ++i) {
    std::string dir = i == 1 ? stem : fmt::format("{}-{}", stem, i);
    if (fs::create_directory(dir, ec)) {
      TRAINPROF_RETURN_IF_ERROR(ClaimRunDir(dir, false, /*fresh=*/true));
      return dir;
    }
    if (ec) {
      return base::ErrnoStatus(fmt::format("cannot create run folder {} (output.dir)", dir),
                               ec.value());
    }
  }
  return InvalidArgument(
      fmt::format("cannot create run folder {}: 999 folders of that name", stem));
}

Status WriteReportFiles(const Report& r, const std::string& dir, bool csv, std::string* summary) {
  std::ostringstream text;
  TerminalRenderer().Render(r, text);
  *summary = text.str();
  Status first = Status::Ok();
  auto keep = [&](Status s) {
    if (!s.ok() && first.ok()) first = std::move(s);
  };
  keep(base::WriteFileAtomically(dir + "/report.json", RenderJsonString(r)));
  keep(base::WriteFileAtomically(dir + "/summary.txt", *summary));
  keep(base::WriteFileAtomically(dir + "/report.html", RenderHtmlString(r)));
  if (csv) keep(WriteCsvFiles(r, dir, nullptr));
  return first;
}

}  // namespace trainprof::report
