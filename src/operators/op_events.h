// What the operator observer records, and the statistics computed from it. Plain data, no
// LibTorch types, so the statistics are tested on hand-made events.
//
//   torchlib::OpData data = ...;                      // from OpObserver::Collect()
//   std::vector<torchlib::OpRow> rows = torchlib::AggregateOps(data, {2, 7}, /*by_shapes=*/true);
//   torchlib::MemoryStats mem = torchlib::AnalyzeMemory(data, {2, 7});
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace trainprof::torchlib {

// Memory is reported per device class: CPU, and CUDA (any CUDA device).
enum DeviceClass : int { kCpu = 0, kCuda = 1, kDeviceClasses = 2 };

// One finished operator call (RecordFunction), times in ns since the session start.
struct OpEvent {
  int64_t begin_ns = 0;
  int64_t dur_ns = 0;
  int64_t self_ns = 0;  // dur_ns minus the time of the operators called inside it
  int64_t step = 0;     // the schedule's step the call began in
  int64_t tid = 0;
  uint32_t name = 0;      // index into OpData::names
  uint32_t shapes = 0;    // index into OpData::shapes; 0 = not recorded ("")
  uint32_t depth = 0;     // 0 = called outside any other observed operator
  bool backward = false;  // run by the autograd engine (RecordScope::BACKWARD_FUNCTION)
  // Bytes allocated and freed while this call was the innermost operator, per device class.
  int64_t self_alloc[kDeviceClasses] = {0, 0};
  int64_t self_freed[kDeviceClasses] = {0, 0};
  // Net bytes (allocated - freed) including the operators called inside it.
  int64_t total_net[kDeviceClasses] = {0, 0};
  // GPU time of the kernels this call launched itself (PyTorch's "Self CUDA"), and with those
  // of the operators called inside it ("CUDA total"). 0 without a GPU trace.
  int64_t self_device_ns = 0;
  int64_t device_ns = 0;
  // The call's id as pushed to a GPU collector as its external correlation id (the
  // RecordFunction handle); 0 when none was pushed.
  uint64_t id = 0;
};

// One report of the allocator (c10::reportMemoryUsage).
struct MemEvent {
  int64_t t_ns = 0;
  int64_t step = 0;
  uint64_t ptr = 0;
  int64_t bytes = 0;            // > 0 allocated, < 0 freed
  int64_t total_allocated = 0;  // the allocator's figure after this event
  int64_t total_reserved = 0;   // caching allocators (CUDA); 0 for the CPU allocator
  int16_t device_type = 0;      // c10::DeviceType value (0 = CPU, 1 = CUDA)
  int16_t device_index = -1;
  uint32_t op = kNoOp;  // name of the innermost operator running, or kNoOp
  static constexpr uint32_t kNoOp = UINT32_MAX;
};

struct OpData {
  std::vector<std::string> names;
  std::vector<std::string> shapes;  // shapes[0] == ""
  std::vector<OpEvent> ops;         // sorted by begin_ns
  std::vector<MemEvent> mem;        // sorted by t_ns
  uint64_t dropped_ops = 0;         // buffer full
  uint64_t dropped_mem = 0;
  uint64_t too_deep = 0;  // calls nested deeper than the observer's stack
};

// The recorded steps: [first, end).
struct StepRange {
  int64_t first = 0;
  int64_t end = 0;
  bool Contains(int64_t step) const { return step >= first && step < end; }
};

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
