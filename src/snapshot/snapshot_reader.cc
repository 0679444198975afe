// The snapshot's pickle read into SnapshotModel: device_traces and external_annotations are
// streamed entry by entry (each entry converted, then its containers given back to the reader);
// frames and stacks are interned, and a memoised frames list becomes a token in the reader's memo
// so that the free of a block (which pickles the alloc's frames list by reference) reads it back
// as the same stack without keeping the list.
#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <unordered_map>

#include "snapshot/pickle_reader.h"
#include "snapshot/snapshot_model.h"

namespace trainprof::snapshot {
namespace {

constexpr int kMaxFrames = 4096;  // frames kept per stack; deeper ones are cut

// Sizes beyond 1 TiB and times beyond 2^52 µs are no allocator's: they read as 0, so that
// sums over a history cannot overflow. An out-of-memory request is never summed and may be
// absurd (that is often the bug), so it is kept up to 2^56.
int64_t Size(int64_t v) { return v >= 0 && v <= (int64_t{1} << 40) ? v : 0; }
int64_t RequestSize(int64_t v) { return v >= 0 && v <= (int64_t{1} << 56) ? v : 0; }
int64_t Time(int64_t v) { return v >= -(int64_t{1} << 52) && v <= (int64_t{1} << 52) ? v : 0; }

bool IsPythonFile(std::string_view f) {
  return (f.size() >= 3 && f.substr(f.size() - 3) == ".py") || (!f.empty() && f[0] == '<');
}

class Builder {
 public:
  Builder(PickleReader& r, SnapshotModel& m) : r_(r), m_(m) {}

  Status TraceItem(uint32_t device, const PickleValue& item);
  Status AnnotationItem(const PickleValue& item);
  void Segments(const PickleValue& list);
  void FinishTimes();

 private:
  uint32_t StackOf(const PickleValue* frames);
  uint32_t FrameOf(const PickleValue& v);
  uint32_t InternStack(const std::string& key);
  uint32_t WithCompileContext(uint32_t stack, std::string_view context);
  std::string_view Text(const PickleValue* v) const { return v == nullptr ? "" : r_.Str(*v); }
  void Block(const PickleValue& b, Segment& seg);

  PickleReader& r_;
  SnapshotModel& m_;
  std::unordered_map<std::string, uint32_t> stack_ids_;
  std::unordered_map<std::string, uint32_t> frame_ids_;
  std::unordered_map<std::string, uint32_t> context_frames_;
  std::string key_;
};

uint32_t Builder::FrameOf(const PickleValue& v) {
  if (v.kind == PickleKind::kToken && v.ref % 2 == 0) return v.ref / 2;
  Frame f;
  f.filename = m_.strings.Intern(Text(r_.Find(v, "filename")));
  f.name = m_.strings.Intern(Text(r_.Find(v, "name")));
  f.line = r_.Int(r_.Find(v, "line"));
  f.python = IsPythonFile(m_.Str(f.filename));
  key_.assign(reinterpret_cast<const char*>(&f.filename), 8);
  key_.append(reinterpret_cast<const char*>(&f.line), 8);
  auto [it, added] = frame_ids_.emplace(key_, static_cast<uint32_t>(m_.frames.size()));
  if (added) m_.frames.push_back(f);
  r_.Replace(v, it->second * 2);
  return it->second;
}

uint32_t Builder::StackOf(const PickleValue* frames) {
  if (frames == nullptr) return 0;
  if (frames->kind == PickleKind::kToken && frames->ref % 2 == 1) return frames->ref / 2;
  const std::vector<PickleValue>& items = r_.Items(*frames);
  if (items.empty()) {  // one empty list may stand for many entries' missing stacks
    r_.Replace(*frames, 1);
    return 0;
  }
  std::string key;
  key.reserve(4 * items.size());
  for (size_t i = 0; i < items.size() && i < kMaxFrames; ++i) {
    const uint32_t f = FrameOf(items[i]);
    key.append(reinterpret_cast<const char*>(&f), 4);
  }
  const uint32_t id = InternStack(key);
  r_.Replace(*frames, id * 2 + 1);
  return id;
}

// `key`: the stack's frame ids, 4 bytes each, innermost first.
uint32_t Builder::InternStack(const std::string& key) {
  auto [it, added] = stack_ids_.emplace(key, static_cast<uint32_t>(m_.stacks()));
  if (added) {
    const auto* ids = reinterpret_cast<const uint32_t*>(key.data());
    m_.stack_frames.insert(m_.stack_frames.end(), ids, ids + key.size() / 4);
    m_.stack_begin.push_back(static_cast<uint32_t>(m_.stack_frames.size()));
  }
  return it->second;
}

// An entry made inside a torch.compile region (record_memory_history(compile_context=True);
// torch 2.11 writes "Torch-Compiled Region: 0/0"): the region becomes the stack's innermost
// frame, "[torch.compile region 0/0]", so live-at-peak and growth tell compiled regions apart.
// "N/A" (the default) and "" mean no region.
constexpr std::string_view kRegionPrefix = "Torch-Compiled Region: ";
uint32_t Builder::WithCompileContext(uint32_t stack, std::string_view context) {
  if (context.empty() || context == "N/A") return stack;
  auto [fit, added] = context_frames_.emplace(std::string(context), 0);
  if (added) {
    Frame f;
    std::string_view region = context;
    if (region.starts_with(kRegionPrefix)) region.remove_prefix(kRegionPrefix.size());
    f.name = m_.strings.Intern(fmt::format("[torch.compile region {}]", region));
    f.filename = m_.strings.Intern("");
    f.python = true;
    fit->second = static_cast<uint32_t>(m_.frames.size());
    m_.frames.push_back(f);
  }
  std::string key(reinterpret_cast<const char*>(&fit->second), 4);
  for (const uint32_t* f = m_.StackBegin(stack); f != m_.StackEnd(stack); ++f)
    key.append(reinterpret_cast<const char*>(f), 4);
  return InternStack(key);
}

Status Builder::TraceItem(uint32_t device, const PickleValue& item) {
  TraceEvent e;
  e.time_us = -1;
  std::string_view context;
  const std::vector<PickleValue>& kv = r_.Items(item);
  for (size_t i = 0; i + 1 < kv.size(); i += 2) {
    const std::string_view k = r_.Str(kv[i]);
    const PickleValue& v = kv[i + 1];
    if (k == "action") {
      e.action = ActionFromName(r_.Str(v));
      if (e.action == Action::kOther) ++m_.unknown_actions;
    } else if (k == "addr") {
      if (e.action != Action::kOom) e.addr = static_cast<uint64_t>(r_.Int(&v));
    } else if (k == "size") {
      e.size = Size(r_.Int(&v));
    } else if (k == "time_us") {
      e.time_us = Time(r_.Int(&v));
      m_.has_times = true;
    } else if (k == "frames") {
      e.stack = StackOf(&v);
    } else if (k == "device_free") {
      e.addr = static_cast<uint64_t>(r_.Int(&v));
    } else if (k == "compile_context") {
      context = r_.Str(v);
    }
  }
  e.stack = WithCompileContext(e.stack, context);
  if (e.action == Action::kOom) {
    e.addr = static_cast<uint64_t>(r_.Int(r_.Find(item, "device_free")));
    e.size = RequestSize(r_.Int(r_.Find(item, "size")));
  }
  m_.traces[device].push_back(e);
  r_.Release(item);
  return Status::Ok();
}

Status Builder::AnnotationItem(const PickleValue& item) {
  Annotation a;
  a.device = r_.Int(r_.Find(item, "device"), -1);
  a.time_us = Time(r_.Int(r_.Find(item, "time_us")));
  a.name = m_.strings.Intern(Text(r_.Find(item, "name")));
  a.start = Text(r_.Find(item, "stage")) != "END";
  m_.annotations.push_back(a);
  r_.Release(item);
  return Status::Ok();
}

void Builder::Block(const PickleValue& b, Segment& seg) {
  SegmentBlock blk;
  blk.address = static_cast<uint64_t>(r_.Int(r_.Find(b, "address")));
  blk.size = Size(r_.Int(r_.Find(b, "size")));
  blk.requested_size = Size(r_.Int(r_.Find(b, "requested_size"), blk.size));
  blk.state = m_.strings.Intern(Text(r_.Find(b, "state")));
  blk.stack = StackOf(r_.Find(b, "frames"));
  seg.blocks.push_back(blk);
}

void Builder::Segments(const PickleValue& list) {
  for (const PickleValue& s : r_.Items(list)) {
    Segment seg;
    seg.device = r_.Int(r_.Find(s, "device"));
    seg.address = static_cast<uint64_t>(r_.Int(r_.Find(s, "address")));
    seg.total_size = Size(r_.Int(r_.Find(s, "total_size")));
    seg.allocated_size = Size(r_.Int(r_.Find(s, "allocated_size")));
    seg.active_size = Size(r_.Int(r_.Find(s, "active_size")));
    seg.segment_type = m_.strings.Intern(Text(r_.Find(s, "segment_type")));
    seg.expandable = r_.Int(r_.Find(s, "is_expandable")) != 0;
    if (const PickleValue* pool = r_.Find(s, "segment_pool_id"))
      for (const PickleValue& p : r_.Items(*pool)) seg.private_pool |= r_.Int(&p) != 0;
    if (const PickleValue* blocks = r_.Find(s, "blocks"))
      for (const PickleValue& b : r_.Items(*blocks)) Block(b, seg);
    m_.segments.push_back(std::move(seg));
  }
}

// Without time_us (older PyTorch) an entry's place in its device's history is its time.
void Builder::FinishTimes() {
  if (m_.has_times) return;
  for (auto& [device, events] : m_.traces)
    for (size_t i = 0; i < events.size(); ++i) events[i].time_us = static_cast<int64_t>(i);
}

StatusOr<SnapshotModel> Read(const std::string& name,
                             const std::function<StatusOr<PickleValue>(PickleReader&)>& read) {
  SnapshotModel m;
  m.path = name;
  PickleReader r;
  Builder b(r, m);
  r.StreamItems("device_traces/*", [&b](uint32_t device, const PickleValue& item) {
    return b.TraceItem(device, item);
  });
  r.StreamItems("external_annotations",
                [&b](uint32_t, const PickleValue& item) { return b.AnnotationItem(item); });
  TRAINPROF_ASSIGN_OR_RETURN(PickleValue top, read(r));
  if (top.kind == PickleKind::kList) {  // torch.cuda.memory_snapshot(): the segments alone
    b.Segments(top);
  } else if (const PickleValue* segments = r.Find(top, "segments")) {
    b.Segments(*segments);
  } else if (r.Find(top, "device_traces") == nullptr) {
    return InvalidArgument(
        fmt::format("{}: a pickle, but not a PyTorch memory snapshot (no \"segments\" or "
                    "\"device_traces\")",
                    name));
  }
  b.FinishTimes();
  return m;
}

}  // namespace

Action ActionFromName(std::string_view n) {
  static constexpr std::pair<const char*, Action> kNames[] = {
      {"alloc", Action::kAlloc},
      {"free_requested", Action::kFreeRequested},
      {"free_completed", Action::kFreeCompleted},
      {"free", Action::kFreeCompleted},
      {"segment_alloc", Action::kSegmentAlloc},
      {"segment_free", Action::kSegmentFree},
      {"segment_map", Action::kSegmentMap},
      {"segment_unmap", Action::kSegmentUnmap},
      {"oom", Action::kOom},
      {"snapshot", Action::kSnapshot},
  };
  for (const auto& [name, a] : kNames)
    if (n == name) return a;
  return Action::kOther;
}

const char* ActionName(Action a) {
  switch (a) {
    case Action::kAlloc:
      return "alloc";
    case Action::kFreeRequested:
      return "free_requested";
    case Action::kFreeCompleted:
      return "free_completed";
    case Action::kSegmentAlloc:
      return "segment_alloc";
    case Action::kSegmentFree:
      return "segment_free";
    case Action::kSegmentMap:
      return "segment_map";
    case Action::kSegmentUnmap:
      return "segment_unmap";
    case Action::kOom:
      return "oom";
    case Action::kSnapshot:
      return "snapshot";
    case Action::kOther:
      return "other";
  }
  return "other";
}

bool LooksLikePickle(const std::string& path) {
  char c = 0;
  std::ifstream in(path, std::ios::binary);
  return in.read(&c, 1) && static_cast<uint8_t>(c) == 0x80;
}

StatusOr<SnapshotModel> ReadSnapshot(const std::string& path) {
  return Read(path, [&path](PickleReader& r) { return r.ReadFile(path); });
}

StatusOr<SnapshotModel> ReadSnapshotBytes(std::string_view bytes, const std::string& name) {
  return Read(name, [&](PickleReader& r) { return r.ReadBytes(bytes, name); });
}

}  // namespace trainprof::snapshot
