// A tool of `trainprof mcp`: its name, description and JSON Schemas (what tools/list says), and
// the function that answers tools/call. One file per tool under src/mcp/tools/, one line in
// Tools() (tools.cc).
//
//   Tool t = TableTool();
//   StatusOr<Json> out = t.call(args, ctx);   // args already checked against t.input_schema
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "mcp/protocol.h"
#include "mcp/roots.h"
#include "trainprof/status.h"

namespace trainprof::mcp {

class RunCache;

// Caps on what one result may hold: an agent asks again for more, it never gets a 1 GB dump.
struct Limits {
  int64_t default_rows = 20;  // rows of a table when the call names no limit
  int64_t max_rows = 500;     // the most rows one call returns
  size_t max_chars = 200000;  // the most characters of one result's JSON
};

// What a tool call may use: the connection's roots and analysed runs, and the client's wishes.
struct ToolContext {
  const Roots* roots = nullptr;
  RunCache* cache = nullptr;
  Limits limits;
  std::string db;                                  // the run history (`--db`); "": the default
  std::function<bool()> cancelled;                 // the client cancelled the call
  std::function<void(int64_t, int64_t)> progress;  // bytes read, bytes in all
};

// A call that is wrong in itself (arguments the schema cannot say are wrong, a path outside the
// roots) comes back as a JSON-RPC error; a call that fails in its work (a trace that cannot be
// read, a table that is not there) as a result with isError, which the agent reads. A tool says
// the first with BadCall; PermissionDenied from Roots::Resolve is one too.
Status BadCall(std::string message);
bool IsBadCall(const Status& s);

struct Tool {
  std::string name;
  std::string title;
  std::string description;
  Json input_schema;
  std::function<StatusOr<Json>(const Json& args, ToolContext& ctx)> call;
};

// Every tool, in the order of tools/list.
const std::vector<Tool>& Tools();
const Tool* FindTool(const std::string& name);

Tool AnalyzeTool();
Tool TableTool();
Tool FindingsTool();
Tool ExplainTool();
Tool DiffTool();
Tool RunsTool();

// tools/list's entry of `t`.
Json ToolListing(const Tool& t);

}  // namespace trainprof::mcp
