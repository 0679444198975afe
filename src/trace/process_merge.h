// The files one process wrote in turn read as one rank: torch.profiler's
// tensorboard_trace_handler writes a file per profiling cycle
// (worker.<time>.pt.trace.json), so a run of 13 cycles leaves 13 files of one rank, each
// with a few steps. Files of the same host, rank and process whose time spans do not overlap
// are merged, in time order, into the earliest (a named worker's files whose clocks start at 0,
// as the legacy profiler writes them, are placed one after another); each merged model gets a
// "files_of_one_process" diagnostic naming how many files it holds.
//
//   models = trace::MergeFilesOfOneProcess(std::move(models));  // 13 files -> 1 rank
#pragma once

#include <vector>

#include "trace/trace_model.h"

namespace trainprof::trace {

// The models with each process's files merged, in their first file's place. Never fails;
// files of different processes, or whose spans overlap, are left as they are.
std::vector<TraceModel> MergeFilesOfOneProcess(std::vector<TraceModel> models);

// Appends `later`'s events to `into` (its names, tracks, devices and diagnostics too), with
// its correlation and external ids moved past `into`'s, and links launches again.
void AppendModel(TraceModel& into, TraceModel&& later);

}  // namespace trainprof::trace
