// Reading one big trace file on several threads (ReadOptions::threads > 1). A plain file is cut
// at guessed event boundaries and its parts parsed on their own threads; a gzip file (ISA-L only)
// is inflated once on its own thread, which cuts the decoded bytes into parts. Either way the
// result, and any error with its line and column, is the sequential reader's: a guess that falls
// inside a string, or a part that does not end where it should, makes the first parser read on
// alone.
//
//   if (auto starts = GuessPartStarts(path, size, opt); !starts.empty())
//     return ReadInParts(std::move(src), path, opt, starts);
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "trace/byte_source.h"
#include "trace/read_options.h"
#include "trace/trace_model.h"
#include "trainprof/status.h"

namespace trainprof::trace {

// The offset in `b` just after a ',' that sits between "}" and "{", or npos.
size_t EventBoundaryIn(std::string_view b);

// Starts of the parts after the first, ascending: the first event boundary after each k/n of
// the file, for n parts of at least min_segment_bytes, one a thread. Empty: read it whole.
std::vector<int64_t> GuessPartStarts(const std::string& path, int64_t size, const ReadOptions& opt);

// The plain file at `path` in parts starting at `starts`; `first_src` reads it from its start.
StatusOr<TraceModel> ReadInParts(std::unique_ptr<ByteSource> first_src, const std::string& path,
                                 const ReadOptions& opt, const std::vector<int64_t>& starts);

// A gzip file (ISA-L) inflated once on its own thread, its decoded stream cut into parts at
// event boundaries and parsed on `opt.threads` threads (kineto_gzip_parts.cc); a file under
// twice opt.min_segment_bytes is parsed by one thread beside the inflating one. `src` inflates
// it from its start, in the caller's Read().
StatusOr<TraceModel> ReadGzipInParts(std::unique_ptr<ByteSource> src, const std::string& path,
                                     const ReadOptions& opt);

}  // namespace trainprof::trace
