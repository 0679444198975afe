// The reader's entry points. The reader walks the JSON one "unit" at a time (an event, or one
// top-level member) over a window of decoded bytes (json_scanner.h). When a unit runs past the
// window, the window is refilled and the unit scanned again; nothing is committed until a unit
// scanned whole, so a cut file keeps every complete event before the cut. A unit larger than
// ReadOptions::max_unit_bytes is streamed past and counted, so one giant string cannot take the
// memory. What the fields mean is kineto_builder.cc's business.
#include "trace/kineto/kineto_reader.h"

#include <algorithm>
#include <memory>
#include <string_view>

#include "trace/byte_source.h"
#include "trace/kineto/json_scanner.h"
#include "trace/kineto/kineto_parser.h"
#include "trace/kineto/kineto_parts.h"

namespace trainprof::trace {

StatusOr<TraceModel> ReadTraceFile(const std::string& path, const ReadOptions& options) {
  TRAINPROF_ASSIGN_OR_RETURN(OpenedFile file, OpenedFile::Open(path, 2));
  return ReadTraceFile(file, options);
}

StatusOr<TraceModel> ReadTraceFile(OpenedFile& file, const ReadOptions& options) {
  const bool parts = options.threads > 1;
  const std::string path = file.path();
  const int64_t size = file.size();
  TRAINPROF_ASSIGN_OR_RETURN(std::unique_ptr<ByteSource> src,
                             OpenTraceBytes(std::move(file), /*inflate_ahead=*/false));
  if (std::string_view(src->decoder()) != "plain") {
    // Only ISA-L inflates fast enough to feed two parsers; zlib inflates at about half the
    // parser's speed, so it only runs beside one.
    if (parts && InflatesWithIsal()) return ReadGzipInParts(std::move(src), path, options);
    src = ReadAhead(std::move(src));
  }
  const bool sized = size >= 0;
  if (parts && sized && size >= 2 * options.min_segment_bytes) {
    std::vector<int64_t> starts = GuessPartStarts(path, size, options);
    if (!starts.empty()) return ReadInParts(std::move(src), path, options, starts);
  }
  // A small plain file gets a window its own size: a 4 MiB buffer zeroed for each of 1,000
  // rank files of 1 MB was a quarter of the time of reading them.
  ReadOptions o = options;
  if (sized && std::string_view(src->decoder()) == "plain")
    o.chunk_bytes = std::min(o.chunk_bytes, static_cast<size_t>(size) + 1);
  KinetoParser parser(src.get(), path, o);
  if (sized && std::string_view(src->decoder()) == "plain") parser.ReserveForBytes(size);
  return parser.Run();
}

StatusOr<TraceModel> ParseTrace(std::string_view json, const std::string& name) {
  ReadOptions o;
  o.chunk_bytes = std::min(o.chunk_bytes, json.size() + 1);  // small inputs, small window
  return ParseTrace(json, name, o);
}

StatusOr<TraceModel> ParseTrace(std::string_view json, const std::string& name,
                                const ReadOptions& options) {
  std::unique_ptr<ByteSource> src = MemoryTraceBytes(json, name);
  ReadOptions o;
  o.chunk_bytes = options.chunk_bytes;
  o.max_unit_bytes = options.max_unit_bytes;
  return ParseFrom(src.get(), name, o);
}

int64_t RankFromFileName(std::string_view file_name) {
  for (size_t at = file_name.find("rank"); at != std::string_view::npos;
       at = file_name.find("rank", at + 1)) {
    size_t i = at + 4;
    if (i < file_name.size() && (file_name[i] == '-' || file_name[i] == '_')) ++i;
    size_t j = i;
    while (j < file_name.size() && j - i < 9 && file_name[j] >= '0' && file_name[j] <= '9') ++j;
    if (j > i) return json::ToInt(file_name.substr(i, j - i)).value_or(-1);
  }
  return -1;
}

bool SniffKinetoJson(std::string_view head) {
  if (head.starts_with("\xEF\xBB\xBF")) head.remove_prefix(3);
  const size_t at = head.find_first_not_of(" \t\r\n");
  return at != std::string_view::npos && (head[at] == '{' || head[at] == '[');
}

}  // namespace trainprof::trace
