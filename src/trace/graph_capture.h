// CUDA / HIP graphs in a trace: a graph launch call (cudaGraphLaunch, hipGraphLaunch) starts
// every kernel of the graph under its one correlation id, so the kernels sit under no operator.
// The trace taken while the graph was captured (vLLM's and SGLang's capture_traces/) still has
// the operators: between cudaStreamBeginCapture and cudaStreamEndCapture each launch call sits
// under the operator that made it, though no kernel runs. MergeGraphCaptures pairs each graph
// launch with a capture window whose launches match its GPU work: one for one in order (kernel
// names where the capture has them, as ROCm's "kernel" arg; else kernel / memcpy / memset), or,
// for graphs captured on several streams or with other copies and memsets, kernel by kernel in
// the order of each name (of each kind when the capture names no kernels), a large graph within
// a tolerance of 0.1 % of its kernels (said in the diagnostic, with what differed),
// and copies that window's ranges and launch calls into the run model, on one track per process
// ("captured operators"), their times mapped linearly into the graph launch call; each graph
// kernel is then credited to its copied launch call (TraceModel::captured_launcher), so the
// operator tree, categories, FLOPs and the roofline cover graphed time. A graph launch that no
// window matches gets a range of its own around its launch call ("hipGraphLaunch: graph of 544
// kernels"), so its kernels form one operator row under whatever ran the launch.
//
//   std::vector<const TraceModel*> caps = {&capture};
//   GraphMerge g = MergeGraphCaptures(run, caps);  // g.mapped_launches of g.graph_launches
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/trace_model.h"
#include "trainprof/status.h"

namespace trainprof::trace {

// Names of what the merge adds: the track of copied operators, and the row of a graph launch
// that matched no capture ("graph replay (hipGraphLaunch, 544 kernels)").
inline constexpr std::string_view kCapturedTrack = "captured operators";
inline constexpr std::string_view kGraphRowPrefix = "graph replay";
inline bool IsGraphRow(std::string_view op_name) {
  return op_name.starts_with(kGraphRowPrefix) && op_name.ends_with(" kernels)");
}

struct GraphMerge {
  int64_t graph_launches = 0;              // graph launch calls with GPU work
  int64_t mapped_launches = 0;             // of them, matched to a capture window
  int64_t mapped_kernels = 0;              // GPU events credited to a captured operator
  int64_t mapped_ns = 0, unmapped_ns = 0;  // GPU time of matched / unmatched graph launches
  std::string first_miss;  // why the first unmatched launch matched no window ("": none, or no
                           // capture trace)
  // Launches matched with up to 0.1 % of their kernels differing (at least one kernel from 500
  // kernel calls on): how many, and what differed in the first.
  int64_t tolerant = 0;
  std::string first_tolerated;
};

// Never fails: what matches nothing stays as it was (with its own range) and is counted in a
// diagnostic on `run`. Without graph launches `run` is unchanged.
GraphMerge MergeGraphCaptures(TraceModel& run, const std::vector<const TraceModel*>& captures);

// Capture traces read once and shared by every rank file of one read (thread-safe): the ranks of
// one folder all look in the same capture_traces/.
class CaptureCache {
 public:
  const StatusOr<TraceModel>& Get(const std::string& path);

 private:
  struct Entry {
    std::once_flag once;
    std::optional<StatusOr<TraceModel>> model;
  };
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<Entry>> entries_;
};

// The capture trace files for the trace at a path (trace_files.h's CaptureFilesFor lists the
// ones given, or those in capture_traces/ beside it). Injected, so the reader lists no folders.
using CaptureLister = std::function<std::vector<std::string>(const std::string& trace_path)>;

// When `m` has graph launches: reads the files `list_captures(m.path)` names and merges them. A
// capture that cannot be read is left out with an "input_skipped" diagnostic. With a cache, each
// capture file is read once for all the traces that use it.
void AttachGraphCaptures(TraceModel& m, const CaptureLister& list_captures,
                         CaptureCache* cache = nullptr);

}  // namespace trainprof::trace
