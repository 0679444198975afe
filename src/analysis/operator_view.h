// The TensorBoard plugin's Operator and Kernel views, from the operator tree (op_tree.h).
//
//   OpTree t = BuildOpTree(m);
//   std::vector<OperatorRow> ops = OperatorView(m, t);  // per cpu_op name
//   std::vector<KernelRow> k = KernelView(m, t, false);  // per kernel name
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/op_tree.h"
#include "trace/trace_model.h"

namespace trainprof::analysis {

// One operator name, summed over its calls (the plugin's "group by operator").
struct OperatorRow {
  std::string name;
  std::string input_dims;  // by input shape only: the calls' "Input Dims"
  std::string call_stack;  // by call stack only: the calls' "Call stack"
  int64_t calls = 0;
  int64_t host_self_ns = 0, host_total_ns = 0;
  int64_t device_self_ns = 0, device_total_ns = 0;
  int64_t tc_self_ns = 0, tc_total_ns = 0;
  bool tc_eligible = false;  // any call eligible
  double tc_self_pct() const {
    return device_self_ns > 0 ? 100.0 * tc_self_ns / device_self_ns : 0;
  }
  double tc_total_pct() const {
    return device_total_ns > 0 ? 100.0 * tc_total_ns / device_total_ns : 0;
  }
};

// Every cpu_op name but the plugin's exclusions, by device total, then host total, then name.
std::vector<OperatorRow> OperatorView(const trace::TraceModel& m, const OpTree& t);
// The TensorBoard plugin's merge (its op tree's remove_dup_nodes, after torch.autograd's
// EventList._remove_dup_nodes): an operator that is the only operator inside a parent operator
// of the same name is one call with it, not two (autograd's MeanBackward1 > aten::div >
// aten::div). Per node of `t`: true when it merges into its parent. The views count no call for
// such a node and add its self times to its parent's row.
std::vector<bool> MergedIntoParent(const trace::TraceModel& m, const OpTree& t);
// The same per operator name and "Input Dims" (record_shapes), for the calls that have them;
// empty for a trace without shapes.
std::vector<OperatorRow> OperatorViewByShape(const trace::TraceModel& m, const OpTree& t);
// The same per operator name and "Call stack" (older traces recorded with with_stack=True; newer
// ones show stacks as python_function ranges instead: the Module view); empty without stacks.
std::vector<OperatorRow> OperatorViewByStack(const trace::TraceModel& m, const OpTree& t);

// One kernel name (or, per operator, one operator and kernel name pair).
struct KernelRow {
  std::string name;
  std::string op;  // per operator only: the range that launched it ("" when none did)
  bool tensor_cores = false;
  int64_t calls = 0, total_ns = 0, min_ns = 0, max_ns = 0;
  // Means weighted by duration; an instance without the figure counts as 0, as in the plugin.
  // NaN when no instance has it (the trace does not record it).
  double blocks_per_sm = 0, occupancy_pct = 0;
  double mean_ns() const { return calls > 0 ? static_cast<double>(total_ns) / calls : 0; }
};

// Kernels only (not memcpy / memset), by total time, then name; `per_operator` splits each
// kernel by the range that launched it.
std::vector<KernelRow> KernelView(const trace::TraceModel& m, const OpTree& t, bool per_operator);

}  // namespace trainprof::analysis
