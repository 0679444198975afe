#include "gpu/correlate.h"

#include "analysis/op_tree.h"

namespace trainprof::gpu {

void SetDeviceTimes(const trace::InProcessRecording& r, const trace::TraceModel& m,
                    torchlib::OpData& ops) {
  for (torchlib::OpEvent& e : ops.ops) e.self_device_ns = e.device_ns = 0;
  const analysis::OpTree t = analysis::BuildOpTree(m);
  for (size_t k = 0; k < t.nodes.size(); ++k) {
    const size_t event = t.nodes[k].event;
    if (event < trace::FirstCallEvent(r) || m.kind[event] != trace::EventKind::kCpuOp) continue;
    torchlib::OpEvent& e = ops.ops[event - trace::FirstCallEvent(r)];
    e.self_device_ns = t.device_self_ns[k];
    e.device_ns = t.device_total_ns[k];
  }
}

}  // namespace trainprof::gpu
