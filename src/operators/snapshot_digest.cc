#include "operators/snapshot_digest.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <set>

namespace trainprof::torchlib {
namespace {

using report::Unit;

constexpr size_t kTopRows = 10;
constexpr int64_t kMiB = int64_t{1} << 20;

struct Segment {
  int64_t device = 0;
  uint64_t address = 0;
  int64_t size = 0, allocated = 0;
  std::string type;
};

std::vector<Segment> Segments(const std::vector<SnapshotBlock>& blocks) {
  std::map<std::pair<int64_t, uint64_t>, Segment> by_address;
  for (const SnapshotBlock& b : blocks) {
    Segment& s = by_address[{b.device, b.segment_address}];
    s = {b.device, b.segment_address, b.segment_size, s.allocated, b.segment_type};
    if (b.state == "active_allocated") s.allocated += b.size;
  }
  std::vector<Segment> out;
  for (auto& [key, s] : by_address) out.push_back(s);
  std::stable_sort(out.begin(), out.end(),
                   [](const Segment& a, const Segment& b) { return a.size > b.size; });
  return out;
}

void AddSegmentTable(const std::vector<Segment>& segs, report::Section& s) {
  report::Table& t = s.AddTable("snapshot_segments", "Largest segments (cudaMalloc'd blocks)",
                                {{"device", "Device", Unit::kCount},
                                 {"address", "Address", Unit::kText},
                                 {"pool", "Pool", Unit::kText},
                                 {"size_bytes", "Size", Unit::kBytes},
                                 {"allocated_bytes", "Allocated in it", Unit::kBytes},
                                 {"allocated_pct", "Allocated %", Unit::kPercent}});
  for (size_t i = 0; i < segs.size() && i < kTopRows; ++i) {
    const Segment& g = segs[i];
    t.rows.push_back({g.device, fmt::format("0x{:x}", g.address), g.type, g.size, g.allocated,
                      g.size > 0 ? report::Value(100.0 * static_cast<double>(g.allocated) /
                                                 static_cast<double>(g.size))
                                 : report::Value()});
  }
}

void AddFreeBlocks(const std::vector<SnapshotBlock>& blocks, report::Section& s) {
  std::vector<const SnapshotBlock*> free;
  for (const SnapshotBlock& b : blocks)
    if (b.state == "inactive") free.push_back(&b);
  std::stable_sort(free.begin(), free.end(), [](const SnapshotBlock* a, const SnapshotBlock* b) {
    return a->size > b->size;
  });
  s.AddMetric("largest_free_block_bytes", "Largest free block",
              free.empty() ? int64_t{0} : free[0]->size, Unit::kBytes);
  report::Table& t = s.AddTable("snapshot_free_blocks", "Largest free blocks inside segments",
                                {{"device", "Device", Unit::kCount},
                                 {"segment", "Segment", Unit::kText},
                                 {"size_bytes", "Size", Unit::kBytes}});
  for (size_t i = 0; i < free.size() && i < kTopRows; ++i) {
    t.rows.push_back(
        {free[i]->device, fmt::format("0x{:x}", free[i]->segment_address), free[i]->size});
  }
}

void AddSizeClasses(const std::vector<SnapshotBlock>& blocks, report::Section& s) {
  static const std::array<std::pair<int64_t, const char*>, 5> kClasses = {{
      {kMiB, "< 1 MiB (small pool)"},
      {10 * kMiB, "1 - 10 MiB"},
      {100 * kMiB, "10 - 100 MiB"},
      {1024 * kMiB, "100 MiB - 1 GiB"},
      {INT64_MAX, ">= 1 GiB"},
  }};
  std::array<std::pair<int64_t, int64_t>, 5> sums{};  // (count, bytes)
  for (const SnapshotBlock& b : blocks) {
    if (b.state != "active_allocated") continue;
    size_t c = 0;
    while (b.size >= kClasses[c].first) ++c;
    ++sums[c].first;
    sums[c].second += b.size;
  }
  report::Table& t = s.AddTable("snapshot_size_classes", "Allocated blocks by size class",
                                {{"size_class", "Size class", Unit::kText},
                                 {"blocks", "Blocks", Unit::kCount},
                                 {"bytes", "Bytes", Unit::kBytes}});
  for (size_t c = 0; c < kClasses.size(); ++c) {
    t.rows.push_back({std::string(kClasses[c].second), sums[c].first, sums[c].second});
  }
}

void AddFrames(const std::vector<SnapshotBlock>& blocks, report::Section& s) {
  std::map<std::string, std::pair<int64_t, int64_t>> by_frames;  // (bytes, blocks)
  for (const SnapshotBlock& b : blocks) {
    if (b.state != "active_allocated") continue;
    auto& [bytes, n] = by_frames[b.frames.empty() ? "(no stack recorded)" : b.frames];
    bytes += b.size;
    ++n;
  }
  std::vector<std::pair<std::string, std::pair<int64_t, int64_t>>> rows(by_frames.begin(),
                                                                        by_frames.end());
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  report::Table& t = s.AddTable("snapshot_frames", "Allocated bytes by allocating stack",
                                {{"frames", "Innermost frames", Unit::kText},
                                 {"bytes", "Allocated", Unit::kBytes},
                                 {"blocks", "Blocks", Unit::kCount}});
  for (size_t i = 0; i < rows.size() && i < kTopRows; ++i) {
    t.rows.push_back({rows[i].first, rows[i].second.first, rows[i].second.second});
  }
}

void AddOoms(const std::vector<SnapshotOom>& ooms, report::Section& s) {
  s.AddMetric("oom_events", "Out-of-memory events", static_cast<int64_t>(ooms.size()),
              Unit::kCount);
  if (ooms.empty()) return;
  report::Table& t = s.AddTable("snapshot_ooms", "Out-of-memory events",
                                {{"device", "Device", Unit::kCount},
                                 {"requested_bytes", "Requested", Unit::kBytes},
                                 {"frames", "Stack", Unit::kText}});
  for (const SnapshotOom& o : ooms) t.rows.push_back({o.device, o.size, o.frames});
}

}  // namespace

void AddSnapshotDigest(const std::vector<SnapshotBlock>& blocks,
                       const std::vector<SnapshotOom>& ooms, const std::string& file,
                       report::Report& report) {
  report::Section& s = report.AddSection("memory_snapshot", "CUDA memory snapshot digest");
  const std::vector<Segment> segs = Segments(blocks);
  int64_t reserved = 0, allocated = 0;
  for (const Segment& g : segs) {
    reserved += g.size;
    allocated += g.allocated;
  }
  s.AddMetric("reserved_bytes", "Reserved (segments)", reserved, Unit::kBytes);
  s.AddMetric("allocated_bytes", "Allocated (active blocks)", allocated, Unit::kBytes);
  s.AddMetric("fragmentation_pct", "Reserved but not allocated",
              reserved > 0 ? report::Value(100.0 * static_cast<double>(reserved - allocated) /
                                           static_cast<double>(reserved))
                           : report::Value(),
              Unit::kPercent);
  s.AddMetric("segments", "Segments", static_cast<int64_t>(segs.size()), Unit::kCount);
  AddSegmentTable(segs, s);
  AddFreeBlocks(blocks, s);
  AddSizeClasses(blocks, s);
  AddFrames(blocks, s);
  AddOoms(ooms, s);
  s.notes.push_back(fmt::format(
      "{}: the allocator's state when the recording stopped. Open it at pytorch.org/memory_viz, "
      "or offline: python -m torch.cuda._memory_viz trace_plot {} -o snapshot.html",
      file, file));
}

}  // namespace trainprof::torchlib
