// Each operator call's GPU time, from the one kernel → operator attribution: the analysis op
// tree (analysis/op_tree.h) of the C++ job's recording read as a model (trace/inprocess/). A
// kernel's launching runtime call belongs to the innermost operator call around it on its
// thread, as in the TensorBoard plugin and in `trainprof analyze`; so a change there reaches the
// job's operator table too.
//
//   trace::TraceModel m = trace::ReadInProcess(rec);   // rec.ops == &op_data
//   gpu::SetDeviceTimes(rec, m, op_data);              // Self CUDA / CUDA total per call
#pragma once

#include "trace/inprocess/inprocess_reader.h"
#include "trace/inprocess/op_data.h"
#include "trace/trace_model.h"

namespace trainprof::gpu {

// Sets each call's self_device_ns (the kernels, copies and memsets it launched itself) and
// device_ns (with those of the calls nested inside it on its thread) from `m`, which is
// ReadInProcess(r) with r.ops == &ops. Without GPU work every figure is 0.
void SetDeviceTimes(const trace::InProcessRecording& r, const trace::TraceModel& m,
                    torchlib::OpData& ops);

}  // namespace trainprof::gpu
