// What only the operator observer's recording (trace/inprocess/op_data.h) can tell: which step
// each allocator report belongs to and where each step's backward pass began, so the activation
// memory of each training step. The operator table and the memory views are computed on the
// recording read as a model (operator_report.h).
//
//   std::vector<torchlib::StepActivation> a = torchlib::StepActivations(data, {2, 7});
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trace/inprocess/op_data.h"

namespace trainprof::torchlib {

// Activation memory of one training step: bytes allocated during the step and still allocated
// when its backward pass began (tensors saved for backward, plus the outputs and the loss).
struct StepActivation {
  int64_t step = 0;
  int64_t device_class = kCpu;
  int64_t bytes = 0;
};

// One per recorded step with a backward pass and per device class with allocator reports, in
// step order. Every report is replayed (warm-up steps too, so blocks allocated then are known).
std::vector<StepActivation> StepActivations(const OpData& data, StepRange steps);

std::string DeviceName(int16_t device_type, int16_t device_index);  // "cpu", "cuda:0"

}  // namespace trainprof::torchlib
