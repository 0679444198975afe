#include "mcp/roots.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cctype>
#include <filesystem>

#include "base/text.h"

namespace trainprof::mcp {

namespace fs = std::filesystem;

namespace {

bool Under(const std::string& path, const std::string& root) {
  if (path == root) return true;
  const std::string prefix = root.ends_with('/') ? root : root + "/";
  return path.starts_with(prefix);
}

}  // namespace

void Roots::Set(const std::vector<std::string>& dirs, const std::string& source) {
  std::vector<std::string> kept;
  for (const std::string& d : dirs) {
    std::error_code ec;
    fs::path p = fs::canonical(d, ec);
    if (!ec && fs::is_directory(p, ec)) kept.push_back(p.string());
  }
  std::lock_guard<std::mutex> lock(mu_);
  dirs_ = std::move(kept);
  source_ = source;
}

std::vector<std::string> Roots::dirs() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dirs_;
}

StatusOr<std::string> Roots::Resolve(const std::string& path) const {
  std::vector<std::string> dirs;
  std::string source;
  {
    std::lock_guard<std::mutex> lock(mu_);
    dirs = dirs_;
    source = source_;
  }
  if (dirs.empty())
    return PermissionDenied(
        fmt::format("{}: no root to read under ({} name no folder)", path, source));
  fs::path p(path);
  if (p.is_relative()) p = fs::path(dirs.front()) / p;
  std::error_code ec;
  const std::string resolved = fs::weakly_canonical(p, ec).string();
  if (ec) return NotFound(fmt::format("{}: {}", path, ec.message()));
  bool allowed = false;
  for (const std::string& d : dirs) allowed = allowed || Under(resolved, d);
  if (!allowed) {
    return PermissionDenied(fmt::format("{}: outside {} ({}); trainprof reads only under them",
                                        path, source, fmt::join(dirs, ", ")));
  }
  if (!fs::exists(resolved, ec)) return NotFound(fmt::format("{}: no such file or folder", path));
  return resolved;
}

std::vector<std::string> DirsOfRoots(const Json& result) {
  std::vector<std::string> out;
  auto it = result.find("roots");
  if (it == result.end() || !it->is_array()) return out;
  for (const Json& r : *it) {
    if (!r.is_object() || !r.contains("uri") || !r["uri"].is_string()) continue;
    std::string p = PathOfFileUri(r["uri"].get<std::string>());
    if (!p.empty()) out.push_back(std::move(p));
  }
  return out;
}

std::string PathOfFileUri(const std::string& uri) {
  constexpr std::string_view kScheme = "file://";
  if (!uri.starts_with(kScheme)) return "";
  std::string rest = uri.substr(kScheme.size());
  if (!rest.starts_with('/')) {  // file://host/path: only the local host
    const size_t slash = rest.find('/');
    if (slash == std::string::npos || rest.substr(0, slash) != "localhost") return "";
    rest = rest.substr(slash);
  }
  std::string out;
  for (size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] == '%' && i + 2 < rest.size() && base::HexDigit(rest[i + 1]) >= 0 &&
        base::HexDigit(rest[i + 2]) >= 0) {
      out += static_cast<char>(base::HexDigit(rest[i + 1]) * 16 + base::HexDigit(rest[i + 2]));
      i += 2;
    } else {
      out += rest[i];
    }
  }
  return out;
}

std::string FileUri(const std::string& path) {
  std::string out = "file://";
  for (unsigned char c : path) {
    if (std::isalnum(c) || c == '/' || c == '-' || c == '_' || c == '.' || c == '~')
      out += static_cast<char>(c);
    else
      out += fmt::format("%{:02X}", c);
  }
  return out;
}

}  // namespace trainprof::mcp
