// The Nsight Systems reader: an `nsys export --type sqlite` database (export schema 3.x) into one
// TraceModel per process, the same model the Kineto reader makes, so every analysis reads it.
//
//   GPU work   CUPTI_ACTIVITY_KIND_KERNEL / _MEMCPY / _MEMSET, names through StringIds, on a track
//              per device and stream (as Kineto's), linked to their launch by correlation id
//   host       CUPTI_ACTIVITY_KIND_RUNTIME: runtime calls ("cudaLaunchKernel", the "_v7000" of
//              the export's names dropped) and driver calls (eventClass 1), per thread
//   NVTX       NVTX_EVENTS push/pop and start/end ranges: PyTorch's emit_nvtx() ranges ("aten::mm,
//              seq = 4, op_id = 317, sizes = [[..]]") are operators with their shapes; others
//              are annotations (ProfilerStep#N marks steps); ranges of a library's own domain
//              (NCCL's) stay on the timeline only
//   devices    TARGET_INFO_GPU, where the export has it (a diagnostic says when not)
//
// A process with GPU work is one rank. A file of several such processes (one `nsys profile` over
// torchrun) is listed as one input part per process, "<file>#pid=<pid>" (NsysParts), ranked in
// the order of their first GPU. Times are put on the Unix epoch by the session's start
// (TARGET_INFO_SESSION_START_TIME), so files of several nodes share a clock. The file is opened
// read-only and immutable (sqlite_db.h): it is never written.
//
//   StatusOr<TraceModel> m = ReadNsysFile("run.sqlite", {});           // one process
//   StatusOr<TraceModel> r1 = ReadNsysFile("run.sqlite", {.part = "pid=145"});
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "trace/read_options.h"
#include "trace/trace_model.h"
#include "trainprof/status.h"

namespace trainprof::trace {

// Whether the first bytes are an SQLite database's ("SQLite format 3\0"). Whether it is an
// Nsight Systems export is told when it is read.
bool SniffSqlite(std::string_view head);

// The processes of the file with GPU work, as parts ("pid=144"), in rank order; empty when the
// file holds at most one (it is then read whole). Errors: not an Nsight Systems export.
StatusOr<std::vector<std::string>> NsysParts(const std::string& path);

// The file (options.part: one process of it) read into a TraceModel. Errors, one line naming
// the file: not an SQLite database, not an Nsight Systems export, no such process.
StatusOr<TraceModel> ReadNsysFile(const std::string& path, const ReadOptions& options);

}  // namespace trainprof::trace
