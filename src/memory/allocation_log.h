// One allocation log for every memory source: a row per allocation (device, bytes, when it was
// made and freed, and its keys: the allocating operator, its stack, and its role), filled by
// adapters from a Kineto trace's [memory] events (analysis/memory_view.cc), a snapshot's allocator
// history (snapshot/snapshot_replay.cc) and the in-process recording. The functions here answer
// from it whatever the source: what was live at a moment, grouped by any key.
//
//   AllocationLog log;
//   log.blocks.push_back({.device = 0, .bytes = 512, .alloc_seq = 3, .free_seq = 9});
//   std::vector<KeyBytes> by_op = LiveAt(log, 0, peak_seq, [](const Block& b) { return b.op; });
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <unordered_map>
#include <vector>

namespace trainprof::memory {

inline constexpr int64_t kBefore = std::numeric_limits<int64_t>::min();  // made before the log
inline constexpr int64_t kNever = std::numeric_limits<int64_t>::max();   // live at its end
inline constexpr uint32_t kNoKey = std::numeric_limits<uint32_t>::max();

// What a block of memory is, with PyTorch's memory timeline's names (export_memory_timeline).
enum class Role : uint8_t {
  kParameter,
  kOptimizerState,
  kInput,
  kTemporary,
  kActivation,
  kGradient,
  kAutogradDetail,
  kUnknown,
};
inline constexpr int kRoles = 8;
const char* RoleName(Role r);  // "parameter", "optimizer state", ..., "unknown"

// Where a block was made, as its source can tell (a bit set): on autograd's backward thread, a
// library's workspace (cuBLAS), while a module was built or moved (Module.__init__, .to, .cuda),
// inside an optimizer's step.
enum Origin : uint8_t {
  kOnAutogradThread = 1,
  kWorkspace = 2,
  kMadeInModelBuild = 4,
  kOptimizerStep = 8,  // made in an optimizer's step(), by its frames
};

struct Block {
  int64_t device = 0;
  int64_t bytes = 0;
  // The device's event order: made by event alloc_seq, gone with event free_seq (kBefore: made
  // before the log began; kNever: live at its end). Times, in the source's clock, beside them.
  int64_t alloc_seq = kBefore, free_seq = kNever;
  int64_t alloc_time = kBefore, free_time = kNever;
  uint64_t addr = 0;
  uint32_t op = kNoKey;     // the source's id of the allocating operator
  uint32_t stack = kNoKey;  // the source's id of the allocating call stack
  uint8_t origin = 0;       // Origin bits
  Role role = Role::kUnknown;
  uint8_t rule = 0;  // the rule that decided the role (roles.h), 0: none
};

struct AllocationLog {
  std::vector<Block> blocks;  // in the order the source made them
};

struct KeyBytes {
  uint32_t key = kNoKey;
  int64_t bytes = 0;
  int64_t blocks = 0;
};

inline bool LiveAfter(const Block& b, int64_t seq) {
  return b.alloc_seq <= seq && seq < b.free_seq;
}

// Bytes of `device` live just after its event `seq`, grouped by key(block); largest first, ties
// by key. `keep(block)` picks the blocks counted (e.g. only those the history made).
template <class Key, class Keep>
std::vector<KeyBytes> LiveAt(const AllocationLog& log, int64_t device, int64_t seq, Key key,
                             Keep keep) {
  std::unordered_map<uint32_t, KeyBytes> by;
  for (const Block& b : log.blocks) {
    if (b.device != device || !LiveAfter(b, seq) || !keep(b)) continue;
    KeyBytes& k = by[key(b)];
    k.key = key(b);
    k.bytes += b.bytes;
    ++k.blocks;
  }
  std::vector<KeyBytes> out;
  out.reserve(by.size());
  for (const auto& [k, v] : by) out.push_back(v);
  std::sort(out.begin(), out.end(), [](const KeyBytes& a, const KeyBytes& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.key < b.key;
  });
  return out;
}

template <class Key>
std::vector<KeyBytes> LiveAt(const AllocationLog& log, int64_t device, int64_t seq, Key key) {
  return LiveAt(log, device, seq, key, [](const Block&) { return true; });
}

// The `n` largest of `device`'s blocks live after event `seq` that `keep` picks (ties: the lower
// address first).
template <class Keep>
std::vector<const Block*> LargestLive(const AllocationLog& log, int64_t device, int64_t seq,
                                      size_t n, Keep keep) {
  std::vector<const Block*> live;
  for (const Block& b : log.blocks)
    if (b.device == device && LiveAfter(b, seq) && keep(b)) live.push_back(&b);
  n = std::min(n, live.size());
  std::partial_sort(live.begin(), live.begin() + static_cast<std::ptrdiff_t>(n), live.end(),
                    [](const Block* a, const Block* b) {
                      return a->bytes != b->bytes ? a->bytes > b->bytes : a->addr < b->addr;
                    });
  live.resize(n);
  return live;
}

}  // namespace trainprof::memory
