// `trainprof mcp`: a Model Context Protocol server on stdio. The reading thread answers what is
// quick (initialize, ping, tools/list, resources) and takes cancellations and the client's
// replies (roots/list); tool calls run one at a time on a worker thread, so a call can be
// cancelled while it reads. A message that cannot be parsed, an unknown method and a failing
// tool each get their error and the server goes on; end of input ends it.
//
//   ServerOptions o;
//   o.roots = {"/data/runs"};
//   return Serve(o, std::cin, std::cout);   // 0 when the client closed the stream
#pragma once

#include <istream>
#include <ostream>
#include <string>
#include <vector>

#include "mcp/tool.h"

namespace trainprof::mcp {

struct ServerOptions {
  // The folders tools may read when the client gives no roots; empty: the working folder.
  std::vector<std::string> roots;
  std::string db;  // the run history of the runs tool (--db); "": $TRAINPROF_DB, the default
  Limits limits;
  // How long a tool call waits for the client's answer to roots/list before it uses `roots`.
  int roots_wait_ms = 5000;
};

// Serves until `in` ends. Returns 0.
int Serve(const ServerOptions& options, std::istream& in, std::ostream& out);

// resources/list's result: every trainprof run folder (a folder with report.json) at most three
// levels under the roots, as report.json and summary.txt resources, at most `limit` folders.
Json RunFolderResources(const std::vector<std::string>& roots, size_t limit);

}  // namespace trainprof::mcp
