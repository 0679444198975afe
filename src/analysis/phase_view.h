// The Phase view: host and GPU time per user annotation (record_function ranges and their
// gpu_user_annotation twins), each put in a phase (forward, backward, optimizer, dataloader or
// user), and the data-loader markers the trace has, by Kineto's names or the user's
// --dataloader-pattern.
//
//   PhaseResult p = ComputePhases(model, BuildOpTree(model), {"load_batch"});
//   if (p.dataloader_markers == 0) ...  // "DataLoader 0 %" means "not marked", not "fast"
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/op_tree.h"
#include "trace/trace_model.h"

namespace trainprof::analysis {

struct PhaseRow {
  std::string name;                   // the annotation
  std::string phase;                  // "forward", "backward", "optimizer", "dataloader" or "user"
  int64_t calls = 0, cpu_ns = 0;      // user_annotation ranges: count and summed duration
  int64_t gpu_calls = 0, gpu_ns = 0;  // gpu_user_annotation ranges of the same name
  int64_t device_ns = 0;  // GPU time launched inside the host ranges (device total, op_tree.h)
};

struct PhaseResult {
  std::vector<PhaseRow> rows;      // by CPU time + GPU time, then name
  int64_t dataloader_markers = 0;  // cpu_op / user_annotation ranges that mark the data loader
};

// The data loader's ranges: IsDataLoaderOp (kernel_class.h), or a name containing one of
// `patterns`.
bool IsDataLoaderName(std::string_view name, const std::vector<std::string>& patterns);
// "forward" when the name has "forward" (any case), "backward" likewise, "optimizer" for
// "Optimizer." / "optimizer", "dataloader" per IsDataLoaderName, else "user".
std::string PhaseOf(std::string_view name, const std::vector<std::string>& patterns);

// ProfilerStep ranges (and those of `steps_from`: FindSteps) are left out. Never fails.
PhaseResult ComputePhases(const trace::TraceModel& m, const OpTree& t,
                          const std::vector<std::string>& dataloader_patterns,
                          const std::vector<std::string>& steps_from = {});

}  // namespace trainprof::analysis
