// What the LibTorch operator observer (src/torch/op_observer.h) records, as plain data: the
// operator calls, with their shapes, and the allocator's reports (each naming the innermost call).
// No LibTorch types, so the in-process reader (inprocess_reader.h) and the statistics
// (operators/) are tested on hand-made events.
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
  int64_t tid = 0;      // the thread that allocated or freed
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

}  // namespace trainprof::torchlib
