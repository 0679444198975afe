// The runs one MCP connection has analysed, kept as their reports (the summaries, never the
// events) while their files are unchanged: a second call on the same trace is answered from here.
//
//   RunCache cache;
//   TRAINPROF_ASSIGN_OR_RETURN(auto run, cache.Get(args, ctx));   // args: path + options
//   const report::Report& r = run->report();
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "analysis/run/driver.h"
#include "mcp/tool.h"

namespace trainprof::mcp {

// The properties of every tool that reads one run: `path` and each option of `trainprof
// analyze` (analysis/run/options.h), under its Python keyword.
Json RunProperties();

// Reads `args`' paths (resolved under the roots) and options into `req`. Errors: BadCall for a
// path outside the roots or an option's value; NotFound for a path that does not exist.
StatusOr<std::vector<std::string>> RunArguments(const Json& args, const ToolContext& ctx,
                                                analysis::AnalyzeRequest& req);

struct AnalyzedRun {
  std::vector<std::string> paths;  // as resolved
  // A trainprof run folder (or its report.json) is read, not analysed: its report.json is the
  // answer.
  bool run_folder = false;
  std::unique_ptr<analysis::RunResult> result;
  const report::Report& report() const { return result->report; }
};

class RunCache {
 public:
  explicit RunCache(size_t capacity = 8) : capacity_(capacity) {}

  // The run of args' path and options: analysed at the first call (with ctx's progress and
  // cancel), then kept while its files' sizes and times are unchanged. Errors: as RunArguments;
  // the run's own (no trace there, a file that cannot be read, cancelled).
  StatusOr<std::shared_ptr<const AnalyzedRun>> Get(const Json& args, const ToolContext& ctx);

  int64_t analyses() const;  // runs analysed or read so far (the rest were answered from here)

 private:
  struct Entry {
    std::string key;
    std::vector<std::string> stamps;
    std::shared_ptr<const AnalyzedRun> run;
  };
  mutable std::mutex mu_;
  std::list<Entry> entries_;  // most recently used first
  size_t capacity_;
  int64_t analyses_ = 0;
};

}  // namespace trainprof::mcp
