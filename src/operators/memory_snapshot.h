// The CUDA caching allocator's snapshot in the structure torch.cuda.memory._snapshot() returns
// (the format pytorch.org/memory_viz reads: segments with their blocks, and the allocator's
// action trace per device), written as memory_snapshot.pickle by trainprof's own pickle writer;
// snapshot/ reads it back like PyTorch's own.
//
//   torchlib::MemSnapshot s = ...;                      // from the CUDA allocator
//   TRAINPROF_RETURN_IF_ERROR(torchlib::WriteSnapshotPickle(s, run_dir +
//   "/memory_snapshot.pickle"));
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trainprof/status.h"

namespace trainprof::torchlib {

struct MemFrame {
  std::string filename;
  int64_t line = 0;
  std::string name;
};

struct MemBlock {
  int64_t size = 0;
  int64_t requested_size = 0;
  uint64_t address = 0;
  std::string state;  // "active_allocated", "active_awaiting_free", "inactive"
  std::vector<MemFrame> frames;
};

struct MemSegment {
  int64_t device = 0;
  uint64_t address = 0;
  int64_t total_size = 0;
  int64_t stream = 0;
  std::string segment_type;  // "small", "large"
  int64_t allocated_size = 0, active_size = 0, requested_size = 0;
  std::vector<MemBlock> blocks;
};

struct MemTraceEntry {
  std::string action;  // "alloc", "free_requested", "free_completed", "segment_alloc", "oom", ...
  uint64_t addr = 0;
  int64_t size = 0;
  int64_t stream = 0;
  int64_t time_us = 0;
  int64_t device_free = -1;  // only for "oom": bytes the driver still reported free
  std::vector<MemFrame> frames;
};

struct MemSnapshot {
  std::vector<MemSegment> segments;
  std::vector<std::vector<MemTraceEntry>> device_traces;  // one list per device
};

// The pickle's bytes.
std::string SnapshotPickle(const MemSnapshot& s);
// Errors name the file.
Status WriteSnapshotPickle(const MemSnapshot& s, const std::string& path);

}  // namespace trainprof::torchlib
