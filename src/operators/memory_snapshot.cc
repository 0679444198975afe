#include "operators/memory_snapshot.h"

#include <filesystem>

#include "base/atomic_file.h"
#include "operators/pickle_writer.h"

namespace trainprof::torchlib {
namespace {

void WriteFrames(const std::vector<MemFrame>& frames, PickleWriter& p) {
  p.BeginList();
  for (const MemFrame& f : frames) {
    p.BeginDict();
    p.StrItem("filename", f.filename);
    p.IntItem("line", f.line);
    p.StrItem("name", f.name);
    p.End();
  }
  p.End();
}

void WriteBlock(const MemBlock& b, PickleWriter& p) {
  p.BeginDict();
  p.UIntItem("address", b.address);
  p.IntItem("size", b.size);
  p.IntItem("requested_size", b.requested_size);
  p.StrItem("state", b.state);
  p.Key("frames");
  WriteFrames(b.frames, p);
  p.End();
}

void WriteSegment(const MemSegment& s, PickleWriter& p) {
  p.BeginDict();
  p.IntItem("device", s.device);
  p.UIntItem("address", s.address);
  p.IntItem("total_size", s.total_size);
  p.IntItem("allocated_size", s.allocated_size);
  p.IntItem("active_size", s.active_size);
  p.IntItem("requested_size", s.requested_size);
  p.IntItem("stream", s.stream);
  p.StrItem("segment_type", s.segment_type);
  p.Key("segment_pool_id");
  p.Tuple2Int(0, 0);
  p.Key("is_expandable");
  p.Bool(false);
  p.Key("frames");
  WriteFrames({}, p);
  p.Key("blocks");
  p.BeginList();
  for (const MemBlock& b : s.blocks) WriteBlock(b, p);
  p.End();
  p.End();
}

// An "oom" entry has no address and says how much the driver still had free.
void WriteTraceEntry(const MemTraceEntry& e, PickleWriter& p) {
  const bool oom = e.action == "oom";
  p.BeginDict();
  p.StrItem("action", e.action);
  if (!oom) p.UIntItem("addr", e.addr);
  p.IntItem("size", e.size);
  p.IntItem("stream", e.stream);
  p.IntItem("time_us", e.time_us);
  if (oom) p.IntItem("device_free", e.device_free);
  p.Key("frames");
  WriteFrames(e.frames, p);
  p.End();
}

}  // namespace

std::string SnapshotPickle(const MemSnapshot& s) {
  PickleWriter p;
  p.BeginDict();
  p.Key("segments");
  p.BeginList();
  for (const MemSegment& seg : s.segments) WriteSegment(seg, p);
  p.End();
  p.Key("device_traces");
  p.BeginList();
  for (const auto& trace : s.device_traces) {
    p.BeginList();
    for (const MemTraceEntry& e : trace) WriteTraceEntry(e, p);
    p.End();
  }
  p.End();
  p.End();
  return p.Finish();
}

Status WriteSnapshotPickle(const MemSnapshot& s, const std::string& path) {
  base::AtomicFile f;
  TRAINPROF_RETURN_IF_ERROR(f.Open(path));
  f.Write(SnapshotPickle(s));
  return f.Commit();
}

}  // namespace trainprof::torchlib
