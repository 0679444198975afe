// What every trace reader takes (trace/kineto/, and the formats after it): how to read, and the
// rank a file's name gives when its contents name none. Kept out of any one reader's header so
// that the readers and the files' list (input_kind.h) share it without including each other.
//
//   ReadOptions o;
//   o.threads = 2;
//   StatusOr<TraceModel> m = ReadInput("rank0.pt.trace.json.gz", o);  // input_kind.h
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace trainprof::trace {

struct ReadOptions {
  // Called now and then with the bytes of the file (compressed, as on disk) consumed so far.
  std::function<void(int64_t file_bytes_done)> progress;
  // Asked between chunks: true stops the read with a kCancelled error (an MCP client's
  // notifications/cancelled). Called from reading threads; must be cheap and thread-safe.
  std::function<bool()> cancelled;
  size_t chunk_bytes = size_t{4} << 20;  // bytes of JSON decoded per read
  // An event or top-level value larger than this is skipped unread, with an "oversized_value"
  // diagnostic, so one giant string cannot exhaust memory.
  size_t max_unit_bytes = size_t{64} << 20;
  // A plain (not gzipped) file of at least twice min_segment_bytes is cut into up to this many
  // parts of at least that size, one a thread; the result is the same as one thread's. A gzip
  // file as large, with threads > 1, is inflated once on its own thread and cut into parts of
  // an eighth of min_segment_bytes, which this many threads parse in turn.
  int threads = 1;
  int64_t min_segment_bytes = int64_t{8} << 20;
  // One part of a file that holds several ranks (input_kind.h's parts: an Nsight Systems
  // export's process, "pid=144"); "": the whole file.
  std::string part;
};

// "rank-3.Jul_15.pt.trace.json" -> 3, "sampled_rank-1.json.gz" -> 1, "rank0.json" -> 0,
// "worker7.json" -> -1 (no "rank" followed by digits).
int64_t RankFromFileName(std::string_view file_name);

}  // namespace trainprof::trace
