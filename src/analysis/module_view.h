// The Module view: the nn.Module hierarchy from the `python_function` ranges named
// "nn.Module: <Class>_<n>" (traces recorded with with_stack or with_modules), with host and
// device time per module, from the operator tree (op_tree.h).
//
//   std::vector<ModuleRow> rows = ModuleView(model, BuildOpTree(model));
//   // rows in depth-first order; rows[k].depth 0 for the outermost modules
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/op_tree.h"
#include "trace/trace_model.h"

namespace trainprof::analysis {

// One module at one place in the hierarchy (the same module name under two parents is two rows).
struct ModuleRow {
  std::string name;  // "nn.Module: Linear_0" without the "nn.Module: " prefix
  std::string path;  // its ancestors and itself, joined by " > "
  int depth = 0;
  int64_t calls = 0;
  int64_t host_ns = 0;         // summed duration of its ranges
  int64_t device_ns = 0;       // GPU time launched inside them (device total)
  int64_t self_device_ns = 0;  // less what its child modules launched
};

// Depth first, children by host time. Empty when the trace has no nn.Module ranges.
std::vector<ModuleRow> ModuleView(const trace::TraceModel& m, const OpTree& t);

}  // namespace trainprof::analysis
