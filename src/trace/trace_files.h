// Which files of a path are traces, and reading several of them in parallel (one per rank).
//
//   StatusOr<std::vector<std::string>> files = ListTraceFiles("traces/");
//   StatusOr<std::vector<TraceModel>> ranks = ReadTraceFiles(*files, {});
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "trace/trace_model.h"
#include "trainprof/status.h"

namespace trainprof::trace {

// A file is returned as is. A folder gives its `*.json`, `*.json.gz` files (which covers
// `*.pt.trace.json(.gz)`), sorted, not recursing, leaving out trainprof's own report.json.
// Errors: the path does not exist, or a folder holds no trace file (the message names it).
StatusOr<std::vector<std::string>> ListTraceFiles(const std::string& path);

struct ReadManyOptions {
  int threads = 0;  // 0: one per core, at most one per file
  // Called from reading threads (serialised) with bytes done and bytes in all files.
  std::function<void(int64_t done, int64_t total)> progress;
};

// Reads every file, in parallel, sorted by rank then file name. The first fatal error (in file
// order) is returned. Two files of one rank are both kept; each gets a "duplicate_rank"
// diagnostic naming the other.
StatusOr<std::vector<TraceModel>> ReadTraceFiles(const std::vector<std::string>& files,
                                                 const ReadManyOptions& options);

}  // namespace trainprof::trace
