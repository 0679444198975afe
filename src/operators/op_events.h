// The statistics computed from what the operator observer records (trace/inprocess/op_data.h):
// the key_averages() rows and the memory peaks.
//
//   torchlib::OpData data = ...;                      // from OpObserver::Collect()
//   std::vector<torchlib::OpRow> rows = torchlib::AggregateOps(data, {2, 7}, /*by_shapes=*/true);
//   torchlib::MemoryStats mem = torchlib::AnalyzeMemory(data, {2, 7});
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/key_averages.h"
#include "trace/inprocess/op_data.h"

namespace trainprof::torchlib {

// One row of the operator table, as PyTorch's key_averages() (times in seconds, memory in
// bytes).
struct OpRow {
  std::string name;
  std::string shapes;  // "" unless grouped by input shapes
  int64_t calls = 0;
  double self_s = 0, total_s = 0;
  int64_t self_net[kDeviceClasses] = {0, 0};    // "Self CPU Mem" / "Self CUDA Mem"
  int64_t total_net[kDeviceClasses] = {0, 0};   // "CPU Mem" / "CUDA Mem"
  int64_t self_alloc[kDeviceClasses] = {0, 0};  // gross bytes, for the CSV
  int64_t self_freed[kDeviceClasses] = {0, 0};
  double self_device_s = 0, device_total_s = 0;  // "Self CUDA" / "CUDA total"
};

// Rows of the calls whose step is in `steps`, grouped by name (and shapes when `by_shapes`),
// in first-seen order.
std::vector<OpRow> AggregateOps(const OpData& data, StepRange steps, bool by_shapes);

// The same rows from PyTorch's key_averages() on the one op tree (analysis/key_averages.h), in
// their order.
std::vector<OpRow> RowsOfKeyAverages(const std::vector<analysis::KeyAverage>& averages);

enum class SortKey {
  kCpuTimeTotal,
  kSelfCpuTimeTotal,
  kCudaTimeTotal,
  kSelfCudaTimeTotal,
  kCpuMemory,
  kSelfCpuMemory,
  kCount
};
// Parses memory.sort_by; false for an unknown name.
bool ParseSortKey(const std::string& name, SortKey* out);
// Largest first; ties keep name order.
void SortOps(std::vector<OpRow>& rows, SortKey key);

struct MemoryPeak {
  int16_t device_type = 0;
  int16_t device_index = -1;
  int64_t peak_allocated = 0;
  int64_t peak_reserved = 0;
  int64_t t_ns = 0;  // when the peak was first reached
  int64_t step = 0;
  int64_t events = 0;  // allocator reports of this device in the recorded steps
  // Bytes still allocated at the peak, by the operator that allocated them, largest first.
  // Bytes allocated before the observer ran have the name "(allocated before the observer)".
  std::vector<std::pair<std::string, int64_t>> live_by_op;
};

// Activation memory of one training step: bytes allocated during the step and still allocated
// when its backward pass began (tensors saved for backward, plus the outputs and the loss).
struct StepActivation {
  int64_t step = 0;
  int64_t device_class = kCpu;
  int64_t bytes = 0;
};

struct MemoryStats {
  std::vector<MemoryPeak> peaks;  // one per device seen, CPU first
  std::vector<StepActivation> activations;
};
MemoryStats AnalyzeMemory(const OpData& data, StepRange steps);

std::string DeviceName(int16_t device_type, int16_t device_index);  // "cpu", "cuda:0"

}  // namespace trainprof::torchlib
