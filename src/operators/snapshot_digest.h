// The digest of a CUDA allocator snapshot (torch.cuda.memory._snapshot()), so nobody has to open
// a 500 MB memory_snapshot.pickle to learn the answer: reserved vs allocated, the largest
// segments and free blocks, allocations by size class, the stack frames that allocate the most,
// and the out-of-memory events with their stacks.
//
//   std::vector<torchlib::SnapshotBlock> blocks = ...;   // every block of every segment
//   torchlib::AddSnapshotDigest(blocks, ooms, "memory_snapshot.pickle", report);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "report/report.h"

namespace trainprof::torchlib {

// One block of a segment; the segment's fields repeat on each of its blocks.
struct SnapshotBlock {
  int64_t device = 0;
  uint64_t segment_address = 0;
  int64_t segment_size = 0;
  std::string segment_type;  // "small" / "large" pool
  int64_t size = 0;
  std::string state;   // "active_allocated", "active_pending_free", "inactive"
  std::string frames;  // the innermost allocating frames, "fn (file.py:12) <- ..."; "" if none
};

struct SnapshotOom {
  int64_t device = 0;
  int64_t size = 0;  // bytes requested
  std::string frames;
};

// The "memory_snapshot" section.
void AddSnapshotDigest(const std::vector<SnapshotBlock>& blocks,
                       const std::vector<SnapshotOom>& ooms, const std::string& file,
                       report::Report& report);

}  // namespace trainprof::torchlib
