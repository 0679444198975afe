// The Kineto reader: PyTorch profiler traces (`*.json`, `*.json.gz`, `*.pt.trace.json(.gz)`,
// Chrome trace event format) into a TraceModel, streaming: the file is read (and gunzipped) in
// chunks and parsed one event at a time, so memory is the model plus one chunk, never the JSON.
// The work is split Perfetto's way: byte_source.h (files, gzip on a second thread),
// json_scanner.h (the window and JSON tokens), kineto_builder.h (what Kineto's fields mean).
//
// Fatal problems (not JSON, not a trace, corrupt gzip, empty file) give a Status whose message
// is one line: "<file>: byte B (line L, column C): <what>". Per-event problems (missing fields,
// negative or NaN durations, unknown categories, flows without a partner) are counted in
// TraceModel::diagnostics and the event is skipped or kept as fits. A file that ends inside the
// event list (a job killed while writing) keeps every event before the cut and adds a
// "truncated" diagnostic.
//
//   StatusOr<TraceModel> m = ReadTraceFile("runs/x/rank0.pt.trace.json.gz", {});
//   if (!m.ok()) { fmt::print(stderr, "{}\n", m.status().message()); return 2; }
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "trace/trace_model.h"
#include "trainprof/status.h"

namespace trainprof::trace {

struct ReadOptions {
  // Called now and then with the bytes of the file (compressed, as on disk) consumed so far.
  std::function<void(int64_t file_bytes_done)> progress;
  size_t chunk_bytes = size_t{4} << 20;  // bytes of JSON decoded per read
  // An event or top-level value larger than this is skipped unread, with an "oversized_value"
  // diagnostic, so one giant string cannot exhaust memory.
  size_t max_unit_bytes = size_t{64} << 20;
  // A plain (not gzipped) file of at least twice min_segment_bytes is cut into up to this many
  // parts of at least that size, one a thread; the result is the same as one thread's. A gzip
  // file as large, with threads > 1, is inflated once on its own thread and cut into parts of
  // half min_segment_bytes, which this many threads parse in turn.
  int threads = 1;
  int64_t min_segment_bytes = int64_t{8} << 20;
};

// Reads one trace file; gzip is recognised by its magic bytes, not the name. The rank is taken
// from distributedInfo.rank, else from the file name (RankFromFileName), else 0 (diagnostic).
StatusOr<TraceModel> ReadTraceFile(const std::string& path, const ReadOptions& options);

// Parses JSON text already in memory (tests, the fuzzer). `name` stands for the file in messages.
StatusOr<TraceModel> ParseTrace(std::string_view json, const std::string& name);
// The same with the window's sizes of `options` (chunk_bytes at least 4 KiB; threads and
// progress are not used): the fuzzer reads with a small window so units are skipped unread.
StatusOr<TraceModel> ParseTrace(std::string_view json, const std::string& name,
                                const ReadOptions& options);

// "rank-3.Jul_15.pt.trace.json" -> 3, "sampled_rank-1.json.gz" -> 1, "rank0.json" -> 0,
// "worker7.json" -> -1 (no "rank" followed by digits).
int64_t RankFromFileName(std::string_view file_name);

}  // namespace trainprof::trace
