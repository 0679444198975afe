// Turns what the operator observer recorded into the "operators" report section (PyTorch's
// key_averages().table() columns, the memory peak and what was live at it, activation memory
// per step, the memory timeline) and into trace.json events (operators on their threads,
// memory counter tracks). Pure functions of their inputs.
//
//   torchlib::OperatorReportInput in{data, {2, 7}, options.memory};
//   torchlib::AddOperatorSection(in, report);
//   torchlib::AddOperatorTrace(in, trace);
#pragma once

#include <cstdint>

#include "operators/op_events.h"
#include "report/report.h"
#include "session/trace_export.h"
#include "trainprof/options.h"

namespace trainprof::torchlib {

struct OperatorReportInput {
  const OpData& data;
  StepRange steps;  // the recorded steps
  const Options::Memory& options;
  int64_t steps_in_run = 0;  // Step() calls of the whole session
  bool gross_memory = true;  // the calls carry gross bytes allocated and freed (CSV columns)
  bool cuda_memory = false;  // show the CUDA Mem columns even without CUDA allocator events
  // The operator rows when the caller made them from the op tree of its recording (the C++ job:
  // RowsOfKeyAverages); null: AggregateOps of `data`'s calls in `steps`.
  const std::vector<OpRow>* rows = nullptr;
};

// Adds the section and its diagnostics (schedule longer than the run, dropped events).
void AddOperatorSection(const OperatorReportInput& in, report::Report& report);
// Operators of the recorded steps as "cpu_op" events (input shapes in "Input Dims" when
// memory.record_shapes), the allocated/reserved bytes as counter tracks.
void AddOperatorTrace(const OperatorReportInput& in, session::TraceInput& trace);

}  // namespace trainprof::torchlib
