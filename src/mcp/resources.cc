// The run folders under the roots, offered as resources (resources/list, resources/read).
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "mcp/roots.h"
#include "mcp/server.h"

namespace trainprof::mcp {

namespace fs = std::filesystem;

namespace {

void FindRunFolders(const fs::path& dir, int depth, std::vector<std::string>& out) {
  std::error_code ec;
  if (fs::is_regular_file(dir / "report.json", ec)) out.push_back(dir.string());
  if (depth == 0) return;
  std::vector<fs::path> subdirs;
  for (fs::directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    if (it->is_directory(ec) && !it->is_symlink(ec) &&
        !it->path().filename().string().starts_with('.'))
      subdirs.push_back(it->path());
  }
  std::sort(subdirs.begin(), subdirs.end());
  for (const fs::path& d : subdirs) FindRunFolders(d, depth - 1, out);
}

}  // namespace

Json RunFolderResources(const std::vector<std::string>& roots, size_t limit) {
  std::vector<std::string> dirs;
  for (const std::string& r : roots) FindRunFolders(r, 3, dirs);
  Json list = Json::array();
  for (size_t i = 0; i < dirs.size() && i < limit; ++i) {
    const std::string name = fs::path(dirs[i]).filename().string();
    list.push_back({{"uri", FileUri(dirs[i] + "/report.json")},
                    {"name", name + "/report.json"},
                    {"title", fmt::format("trainprof run {}: report.json", name)},
                    {"description", "the run's whole report (sections, tables, findings)"},
                    {"mimeType", "application/json"}});
    std::error_code ec;
    if (fs::is_regular_file(dirs[i] + "/summary.txt", ec)) {
      list.push_back({{"uri", FileUri(dirs[i] + "/summary.txt")},
                      {"name", name + "/summary.txt"},
                      {"title", fmt::format("trainprof run {}: summary", name)},
                      {"description", "the run's report as the terminal prints it"},
                      {"mimeType", "text/plain"}});
    }
  }
  return {{"resources", std::move(list)}};
}

}  // namespace trainprof::mcp
