// PyTorch's key_averages().table() as report tables, over any TraceModel: the rows are
// KeyAverages on the one op tree (key_averages.h), with torch.profiler's column names. The torch
// reports (the C++ job's recording, the Python Session's torch.profiler trace) show it as their
// operator table, so each has one, computed where analyze computes its views.
//
//   OperatorTableOptions o{.sort_by = "self_cpu_time_total"};
//   AddOperatorTables(model, /*counted=*/nullptr, o, section);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "report/report.h"
#include "trace/trace_model.h"

namespace trainprof::analysis {

struct OperatorTableOptions {
  bool by_shapes = false;                  // a row per name and "Input Dims"
  std::string sort_by = "cpu_time_total";  // torch's table(sort_by=...) names
  int64_t row_limit = 100;                 // rows of "operators_top"; "operators" has all
  bool gross_memory = true;  // CSV-only columns of the bytes allocated and freed themselves
  bool cuda_memory = false;  // the CUDA Mem columns even without a GPU [memory] event
  // Rows for the host user annotations too (record_function, ProfilerStep#N): a Kineto trace's,
  // as torch.profiler's table has them; not the steps an in-process recording adds.
  bool annotation_rows = false;
};

// Adds to `s` the metrics self_cpu_time_total_s, self_cuda_time_total_s (with device time) and
// operator_calls, and the tables "operators_top" (row_limit rows, sorted) and "operators" (all,
// a detail table), for the calls `counted` marks (by event index; null: all). An unknown sort_by
// sorts by cpu_time_total. No rows: a note that says so.
void AddOperatorTables(const trace::TraceModel& m, const std::vector<bool>* counted,
                       const OperatorTableOptions& o, report::Section& s);

}  // namespace trainprof::analysis
