// A PyTorch CUDA allocator snapshot (torch.cuda.memory._dump_snapshot's pickle, or trainprof's
// own memory_snapshot.pickle) as compact structs: the allocator's history per device
// (device_traces), the segments at the end, and the record_function annotations. Strings, stack
// frames and whole stacks are interned, so a million trace entries cost ~32 bytes each.
//
//   StatusOr<SnapshotModel> m = ReadSnapshot("memory_snapshot.pickle");
//   if (!m.ok()) return m.status();  // one line: "<file>: byte <n>: <why>"
//   for (const auto& [device, events] : m->traces) ...
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "snapshot/pickle_strings.h"
#include "trainprof/status.h"

namespace trainprof::snapshot {

enum class Action : uint8_t {
  kAlloc,
  kFreeRequested,
  kFreeCompleted,
  kSegmentAlloc,
  kSegmentFree,
  kSegmentMap,
  kSegmentUnmap,
  kOom,
  kSnapshot,
  kOther,
};
Action ActionFromName(std::string_view name);
const char* ActionName(Action a);

struct Frame {
  uint32_t filename = 0;  // string ids
  uint32_t name = 0;
  int64_t line = 0;
  bool python = false;  // a Python source frame (else C++ or unknown)
};

// One trace entry. For "oom", `addr` holds device_free (what the driver said was free).
struct TraceEvent {
  uint64_t addr = 0;
  int64_t size = 0;
  int64_t time_us = 0;
  uint32_t stack = 0;  // 0: no frames
  Action action = Action::kOther;
};

struct SegmentBlock {
  uint64_t address = 0;
  int64_t size = 0;
  int64_t requested_size = 0;
  uint32_t state = 0;  // string id: "active_allocated", "active_awaiting_free", "inactive"
  uint32_t stack = 0;
};

struct Segment {
  int64_t device = 0;
  uint64_t address = 0;
  int64_t total_size = 0;
  int64_t allocated_size = 0;
  int64_t active_size = 0;
  uint32_t segment_type = 0;  // string id: "large", "small"
  bool expandable = false;
  bool private_pool = false;  // segment_pool_id other than (0, 0): a CUDA graph's pool
  std::vector<SegmentBlock> blocks;
};

struct Annotation {
  int64_t device = -1;
  int64_t time_us = 0;
  uint32_t name = 0;
  bool start = true;  // stage "START" (else "END")
};

struct SnapshotModel {
  std::string path;
  StringTable strings;
  std::vector<Frame> frames;
  // Stack s is frames stack_frames[stack_begin[s] .. stack_begin[s + 1]), innermost first;
  // stack 0 is the empty stack.
  std::vector<uint32_t> stack_frames;
  std::vector<uint32_t> stack_begin = {0, 0};
  std::map<int64_t, std::vector<TraceEvent>> traces;  // by device
  std::vector<Segment> segments;
  std::vector<Annotation> annotations;
  int64_t unknown_actions = 0;  // entries whose action trainprof does not know
  bool has_times = false;       // entries carry time_us

  size_t stacks() const { return stack_begin.size() - 1; }
  std::string_view Str(uint32_t id) const { return strings.Get(id); }
  // The frames of stack s.
  const uint32_t* StackBegin(uint32_t s) const { return stack_frames.data() + stack_begin[s]; }
  const uint32_t* StackEnd(uint32_t s) const { return stack_frames.data() + stack_begin[s + 1]; }
};

// True when the file's first byte is pickle's PROTO opcode (0x80), as a snapshot's is.
bool LooksLikePickle(const std::string& path);

// Reads a snapshot pickle. Errors: one line naming the file and byte (not a pickle, cut short,
// refused opcode, not a snapshot: no "segments" or "device_traces").
StatusOr<SnapshotModel> ReadSnapshot(const std::string& path);
StatusOr<SnapshotModel> ReadSnapshotBytes(std::string_view bytes, const std::string& name);

}  // namespace trainprof::snapshot
