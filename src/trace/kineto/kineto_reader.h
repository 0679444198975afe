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

#include <string>
#include <string_view>

#include "trace/byte_source.h"
#include "trace/read_options.h"
#include "trace/trace_model.h"
#include "trainprof/status.h"

namespace trainprof::trace {

// Reads one trace file; gzip is recognised by its magic bytes, not the name. The rank is taken
// from distributedInfo.rank, else from the file name (RankFromFileName), else 0 (diagnostic).
StatusOr<TraceModel> ReadTraceFile(const std::string& path, const ReadOptions& options);
// The same for a file already opened (its kind told from its head): read on from there.
StatusOr<TraceModel> ReadTraceFile(OpenedFile& file, const ReadOptions& options);

// Whether the first decoded bytes of a file look like a Kineto trace: JSON whose top value is an
// object or an array (Kineto writes an object; the legacy profiler's Chrome traces, an array),
// after an optional UTF-8 byte-order mark. The sniff of input_kind.h's list.
bool SniffKinetoJson(std::string_view head);

// Parses JSON text already in memory (tests, the fuzzer). `name` stands for the file in messages.
StatusOr<TraceModel> ParseTrace(std::string_view json, const std::string& name);
// The same with the window's sizes of `options` (chunk_bytes at least 4 KiB; threads and
// progress are not used): the fuzzer reads with a small window so units are skipped unread.
StatusOr<TraceModel> ParseTrace(std::string_view json, const std::string& name,
                                const ReadOptions& options);

}  // namespace trainprof::trace
