// Which files of a path are traces, and reading several of them in parallel (one per rank).
//
//   StatusOr<std::vector<std::string>> files = ListTraceFiles("traces/");
//   StatusOr<std::vector<TraceModel>> ranks = ReadTraceFiles(*files, {});
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "trace/graph_capture.h"
#include "trace/input_kind.h"
#include "trace/trace_model.h"
#include "trainprof/status.h"

namespace trainprof::trace {

// A file is returned as is. A folder gives its traces, sorted, not recursing: the files whose
// first bytes are a timeline's (input_kind.h: a Kineto trace under any name, plain or gzip), and
// the `*.json`, `*.json.gz` files whose bytes are no kind (so their read error is said), leaving
// out trainprof's own report.json.
// Errors: the path does not exist, or a folder holds no trace file (the message names it).
StatusOr<std::vector<std::string>> ListTraceFiles(const std::string& path);

// The traces below a path as runs (traces told as ListTraceFiles tells them): a file is one run;
// a folder is searched recursively (the
// TensorBoard log-dir layout puts runs in subfolders, under plugins/profile/<time>/), and each
// folder that holds trace files is one run, its files that run's ranks. Symlinked folders are
// not followed, nor the subfolders of a trainprof run folder (one with a report.json: its
// trace.json already holds its ranks). An entry that cannot be read (a dangling symlink, a symlink
// loop, a folder without permission) is skipped and said in `skipped`, one line each. A
// capture_traces/ folder beside a run's trace (vLLM, SGLang) is that run's graph capture data,
// read with it (graph_capture.h), not a run: it is said in `skipped` too. The memory snapshots
// and memory timelines met on the way (told by their bytes) are in `snapshots`: each is a report
// of its own, so the one walk lists them too.
struct TraceRun {
  std::string dir;                 // the folder (or the file) of the run
  std::vector<std::string> files;  // sorted
};
struct TraceListing {
  std::vector<TraceRun> runs;          // sorted by folder
  std::vector<std::string> skipped;    // why each skipped entry was skipped
  std::vector<std::string> snapshots;  // memory snapshots and timelines in the folder, sorted
};
// Errors: the path does not exist; neither a trace file nor a memory snapshot anywhere below the
// folder (naming it). A folder of snapshots only lists no run.
StatusOr<TraceListing> ListTraceRuns(const std::string& path);

struct ReadManyOptions {
  int threads = 0;  // 0: one per core, at most one per file
  // Called from reading threads (serialised) with bytes done and bytes in all files.
  std::function<void(int64_t done, int64_t total)> progress;
  // True stops the reading: files not started and the chunks not read fail with kCancelled.
  std::function<bool()> cancelled;
  // When set, asked on the reading thread before file i is read (the files' indices come in
  // nearly ascending order, from several threads at once): false leaves the file to another
  // reader (`analyze --mpi`'s processes share the files as they go), and `fn` is not called
  // for it.
  std::function<bool(size_t i)> claim;
  // When set, a file that cannot be read as a trace (a config.json, a corrupt file) is left out
  // and its one-line error appended here; the call fails only when no file can be read.
  std::vector<std::string>* skipped = nullptr;
  // Graph capture traces for traces with CUDA/HIP graph launches (graph_capture.h); empty: the
  // ones in capture_traces/ beside each trace, if any.
  std::vector<std::string> capture_traces;
};

// The capture traces beside a trace file: every trace file in "capture_traces/" in the trace's
// folder (vLLM's and SGLang's layout; their execution_details.json is not one), or none.
std::vector<std::string> CaptureTracesBeside(const std::string& trace_path);
// The capture trace files for the trace at `trace_path`: those `given` (files or folders) when
// any, else CaptureTracesBeside (graph_capture.h's CaptureLister).
std::vector<std::string> CaptureFilesFor(const std::vector<std::string>& given,
                                         const std::string& trace_path);

// One input read as every reading of a run reads it: its kind's reader (input_kind.h's
// ReadInput), then the model passes: graph captures credited (CaptureFilesFor
// `capture_traces`), overlapping work on a stream noted. The HTA methods that read a rank again
// take this, so they see the model the analysis saw. Errors: ReadInput's.
StatusOr<TraceModel> ReadModel(const std::string& input, const ReadOptions& ro,
                               const std::vector<std::string>& capture_traces = {},
                               CaptureCache* captures = nullptr);

// Reads every file (each by its kind's reader, input_kind.h's ReadInput), in parallel, sorted by
// rank then file name. The first fatal error (in file
// order) is returned. Two files of one rank are both kept; each gets a "duplicate_rank"
// diagnostic naming the other.
StatusOr<std::vector<TraceModel>> ReadTraceFiles(const std::vector<std::string>& files,
                                                 const ReadManyOptions& options);

// Reads every file in parallel (as ReadTraceFiles) and hands each result to `fn` on the reading
// thread, as soon as it is read, so a caller that keeps only what it computes from a model holds
// one model per thread. fn(i, model) is called once per file, concurrently for different files.
void ForEachTraceFile(const std::vector<std::string>& files, const ReadManyOptions& options,
                      const std::function<void(size_t, StatusOr<TraceModel>)>& fn);

}  // namespace trainprof::trace
