// What a file holds, told by its first bytes and never by its name: the list of the input kinds
// trainprof reads, one entry each (a name, a sniff of the first decoded bytes, and, for a
// timeline, the reader that makes a TraceModel of it). A new format is one entry here and one
// folder that reads it.
//
//   InputKind k = SniffInput("renamed_trace.txt");   // kKinetoJson
//   StatusOr<TraceModel> m = ReadInput("rank0.pt.trace.json.gz", {});
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trace/byte_source.h"
#include "trace/read_options.h"
#include "trace/trace_model.h"
#include "trainprof/status.h"

namespace trainprof::trace {

enum class InputKind {
  kUnknown,
  kKinetoJson,      // a PyTorch profiler (Kineto) trace, Chrome trace JSON, plain or gzip
  kMemorySnapshot,  // a PyTorch CUDA allocator snapshot pickle (torch.cuda.memory._snapshot)
  kNsysSqlite,      // an Nsight Systems profile exported as SQLite (nsys export --type sqlite)
  kMemoryTimeline,  // torch.profiler's export_memory_timeline_raw: [[time, action, bytes, cat]]
  kRankSummary,     // a rank's summary, `analyze --summary-only` (rank_summary.h): `merge` reads it
  kRankDigest,      // a rank's digest, `analyze --digest` (digest.h): SQLite, `merge` reads it
  kOtherSqlite,     // an SQLite database of another program (a run history, ...): never read
};

// The first bytes of a rank summary (.tpsum), and the SQLite application_id of a rank digest
// ("tpdg"), by which the list tells them from other files. Nsight Systems leaves its exports'
// application_id 0.
inline constexpr std::string_view kRankSummaryMagic = "TPSUMMARY";
inline constexpr uint32_t kRankDigestApplicationId = 0x74706467;

struct InputFormat {
  InputKind kind;
  std::string_view name;  // as messages say it ("PyTorch profiler trace")
  // Whether the first decoded bytes of a file (at least 512 unless the file is shorter; up to
  // kSniffBytes when gunzipped) are this kind's.
  bool (*sniff)(std::string_view head);
  // The file read into a TraceModel; null for a kind that is not a timeline (snapshots have
  // their own model, snapshot/). Errors: as the kind's reader says (one line naming the file).
  // The file comes opened, read as far as its head (its kind was told from it).
  StatusOr<TraceModel> (*read)(OpenedFile& file, const ReadOptions& options);
  // For a kind whose file can hold several ranks: their parts (ReadOptions::part), empty when
  // the file is one rank; null when it always is. Errors: the file is not of this kind.
  StatusOr<std::vector<std::string>> (*parts)(const std::string& path) = nullptr;
  // For a kind that is not a timeline: what reads it, for the error of a command that does not
  // ("`trainprof merge` reads it").
  std::string_view read_by = {};
};

inline constexpr size_t kSniffBytes = 4096;
// The raw bytes a sniff reads (enough for every sniff; gzip'd JSON inflates to a few KiB).
inline constexpr size_t kHeadBytes = 512;

// Every kind, in the order they are tried.
std::span<const InputFormat> InputFormats();

// The entry of `kind`; nullptr for kUnknown.
const InputFormat* FindInputFormat(InputKind kind);

// The kind of the file at `path`: the first entry whose sniff takes its first bytes; kUnknown
// when none does, or the file cannot be opened.
InputKind SniffInput(const std::string& path);
// The same for a file's first kHeadBytes raw bytes (fewer when it is shorter).
InputKind SniffHead(std::string_view head);

// The inputs of `files`: each file as it is, but one that holds several ranks as one input per
// rank, "<file>#<part>" (an Nsight Systems export of several processes). A file whose parts
// cannot be told stays whole, so its error is said when it is read.
std::vector<std::string> ExpandInputParts(std::vector<std::string> files);
// The inputs of one file whose kind is known (sniffed when it was listed). Errors: its kind's
// `parts` could not tell them (the file is not of that kind after all: an SQLite file that is
// no Nsight export).
StatusOr<std::vector<std::string>> InputsOfFile(const std::string& file, InputKind kind);

// Whether `path` is named as Nsight Systems' own report (.nsys-rep, .qdrep), which only nsys
// reads.
bool IsNsysReport(std::string_view path);

// An input's file and part: "run.sqlite#pid=144" -> {"run.sqlite", "pid=144"} when no file has
// the whole name; else {input, ""}.
std::pair<std::string, std::string> SplitInputPart(const std::string& input);

// Whether `path` is a regular file that sniffs as a memory snapshot, or as PyTorch's memory
// timeline export (read by the snapshot room too).
bool IsMemorySnapshot(const std::string& path);
// Whether a kind is one of the memory snapshot kinds (a snapshot pickle or a memory timeline):
// a report of its own, never a rank of a run.
bool IsMemorySnapshotKind(InputKind k);

// The input (a file, or "<file>#<part>") read by its kind's reader. A timeline of no kind the
// list knows (a file that cannot be opened, an empty one, text that is not JSON) goes to the
// Kineto reader, whose error names the file and the byte; an Nsight Systems report
// (.nsys-rep, .qdrep) is refused with how to export it. Errors: that reader's; a kind that is
// not a timeline (naming it).
StatusOr<TraceModel> ReadInput(const std::string& path, const ReadOptions& options);

}  // namespace trainprof::trace
