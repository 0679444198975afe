// The torch reports' operator sections, from a recording read as a model (the C++ job's
// observer and CUPTI recording, the Python Session's torch.profiler events or trace): the
// "operators" section (PyTorch's key_averages().table(), analysis/operator_table.h, with what
// only the in-process side knows: the schedule, dropped events, activation memory per step),
// then the views `trainprof analyze` gives the same models (memory, overview, GPU, HTA's...)
// without analyze's own operator view. And the observer's calls as trace.json events.
//
//   torchlib::OperatorReportInput in{{2, 7}, options.memory, steps_in_run};
//   in.data = &op_data;  in.counted = &counted;
//   const auto run = analysis::AnalyzeModels(std::move(models), torchlib::RecordingRequest());
//   torchlib::AddRecordingSections(run, in, run_dir, "in-process recording: ", r);
//   torchlib::AddOperatorTrace(op_data, {2, 7}, trace);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/run/driver.h"
#include "report/report.h"
#include "session/trace_export.h"
#include "trace/inprocess/op_data.h"
#include "trace/trace_model.h"
#include "trainprof/options.h"

namespace trainprof::torchlib {

struct OperatorReportInput {
  StepRange steps;  // the recorded steps
  const Options::Memory& options;
  int64_t steps_in_run = 0;  // Step() calls of the whole session
  // The calls of the recorded steps, by event of the model; null: all its calls.
  const std::vector<bool>* counted = nullptr;
  // The observer's recording (the C++ job): dropped events, too deep calls, activation memory.
  const OpData* data = nullptr;
  bool gross_memory = true;      // the calls carry gross bytes allocated and freed (CSV columns)
  bool cuda_memory = false;      // show the CUDA Mem columns even without CUDA allocator events
  bool annotation_rows = false;  // record_function ranges are rows (a Kineto trace's, as torch's)
  // The model's [memory] events are allocations and frees with addresses: the memory view of
  // them joins the report. False for torch's net bytes per call (no pairs, so no live blocks).
  bool memory_view = true;
  std::vector<std::string> notes;  // said under the section's first note
};

// Adds the "operators" section of model `m` and its diagnostics (a schedule longer than the
// run, dropped events).
void AddOperatorSection(const trace::TraceModel& m, const OperatorReportInput& in,
                        report::Report& report);

// What analyze is asked for a recording: every step of it, on this thread.
analysis::AnalyzeRequest RecordingRequest();

// The operator section of run.models[0], then analyze's sections of `run` (driver.h,
// AdoptTraceSections), titled with `title_prefix`. `run` comes from AnalyzeModels or LoadRun
// with RecordingRequest(). True when it holds GPU work.
bool AddRecordingSections(const analysis::LoadedRun& run, const OperatorReportInput& in,
                          const std::string& label, const std::string& title_prefix,
                          report::Report& report);

// Operators of the recorded steps as "cpu_op" events (input shapes in "Input Dims" when
// recorded), the allocated/reserved bytes as counter tracks.
void AddOperatorTrace(const OpData& data, StepRange steps, session::TraceInput& trace);

}  // namespace trainprof::torchlib
