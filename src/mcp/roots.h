// The folders an MCP client lets trainprof read: the roots the client gives (roots/list), else
// the server's --root folders, else the working folder. Every path a tool reads is resolved
// here first: made absolute (a relative path is taken from the first root), its links followed,
// and refused unless it lies under a root.
//
//   Roots roots;
//   roots.Set({"/data/runs"}, "--root");
//   StatusOr<std::string> p = roots.Resolve("rank0.json");   // "/data/runs/rank0.json"
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "mcp/protocol.h"
#include "trainprof/status.h"

namespace trainprof::mcp {

class Roots {
 public:
  // The folders, made canonical; `source` names them in errors ("the client's roots"). A folder
  // that does not exist is left out.
  void Set(const std::vector<std::string>& dirs, const std::string& source);
  std::vector<std::string> dirs() const;

  // `path` as a canonical path under a root. Errors: PermissionDenied when it lies outside every
  // root (the message names the path and the roots); NotFound when it does not exist.
  StatusOr<std::string> Resolve(const std::string& path) const;

 private:
  mutable std::mutex mu_;
  std::vector<std::string> dirs_;
  std::string source_ = "the roots";
};

// The local folders of roots/list's result ({"roots": [{"uri": "file:///..."}]}); URIs of
// other schemes are left out.
std::vector<std::string> DirsOfRoots(const Json& result);

// "file:///a%20b" -> "/a b"; "" when `uri` is not a file URI.
std::string PathOfFileUri(const std::string& uri);
// "/a b" -> "file:///a%20b".
std::string FileUri(const std::string& path);

}  // namespace trainprof::mcp
