// The C++ job's own recording as one more reader: the operator calls and allocator reports the
// LibTorch observer recorded (op_data.h) and the GPU activity a CUPTI collector recorded
// (activity.h) become a TraceModel as a Kineto or Nsight file does (NameRank, FinishModel), so
// the job's report gets the views of `trainprof analyze`, computed by the same code.
//
//   trace::InProcessRecording rec{.label = run_dir, .base_time_ns = unix_ns_at_t0, .pid = pid};
//   rec.ops = &op_data;  rec.gpu = &activity;  rec.steps = {{3, 0, 1'000'000, tid}};
//   trace::TraceModel m = trace::ReadInProcess(rec);
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "trace/inprocess/activity.h"
#include "trace/inprocess/op_data.h"
#include "trace/trace_model.h"

namespace trainprof::trace {

// One step of the schedule, as torch.profiler's ProfilerStep#N range: times in ns since t0.
struct InProcessStep {
  int64_t number = 0;
  int64_t begin_ns = 0, end_ns = 0;
  int64_t tid = 0;
};

struct InProcessRecording {
  std::string label;         // the model's path: what the report names as its input
  int64_t base_time_ns = 0;  // Unix time of t0, in ns (the model's base time)
  int64_t pid = 0;           // the host process
  int64_t rank = -1;         // the process's rank; -1: unknown (NameRank's default)
  int64_t world_size = 0;
  const torchlib::OpData* ops = nullptr;   // times in ns since t0; may be null
  const gpu::ActivityData* gpu = nullptr;  // times in ns since t0; may be null
  std::vector<InProcessStep> steps;        // the recorded steps
  // The span kept, in ns since t0: the calls that overlap it, the allocator reports inside it,
  // and the device work those calls launched (or, with no launch, that overlaps it), wherever
  // it ran (the observer also records the schedule's warm-up steps, which reports leave out).
  int64_t from_ns = INT64_MIN, to_ns = INT64_MAX;
};

// The recording as a model: each step a ProfilerStep#N user annotation, each operator call a
// cpu_op (with its input shapes as Input Dims and its call id as External id), each allocator
// report a [memory] event on its thread, each runtime or driver call and each kernel, copy and
// memset on the host thread or device stream that ran it, tied by correlation id. Times become
// Unix ns; only what lies in [r.from_ns, r.to_ns). Synchronization records are not work and are
// left out, as Kineto leaves them.
TraceModel ReadInProcess(const InProcessRecording& r);

}  // namespace trainprof::trace
