// The pickle machine: a stack of small values, a memo, marks, and containers kept in one arena
// with a free list. Only plain data's opcodes are executed; every other opcode is refused.
#include "snapshot/pickle_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <filesystem>

#include "snapshot/pickle_machine.h"
#include "trace/byte_source.h"

namespace trainprof::snapshot {
Status PickleReader::Machine::Push(PickleValue v) {
  if (stack_.size() >= kMaxStack)
    return Fail(fmt::format("more than {} values on the pickle stack", kMaxStack));
  stack_.push_back(v);
  return Status::Ok();
}

StatusOr<PickleValue> PickleReader::Machine::Pop(std::string_view why) {
  const size_t floor = marks_.empty() ? 0 : marks_.back();
  if (stack_.size() <= floor) return Fail(fmt::format("{} with no value on the stack", why));
  PickleValue v = stack_.back();
  stack_.pop_back();
  return v;
}

StatusOr<size_t> PickleReader::Machine::PopMark() {
  if (marks_.empty()) return Fail("an opcode that needs a MARK, but none is open");
  const size_t m = marks_.back();
  marks_.pop_back();
  return m;
}

int32_t PickleReader::Machine::PathId(int32_t parent, std::string_view key) const {
  if (parent < 0 || streams_.empty()) return -1;
  const std::string& p = paths_[parent];
  std::string full = p.empty() ? std::string(key) : fmt::format("{}/{}", p, key);
  for (size_t i = 0; i < paths_.size(); ++i)
    if (paths_[i] == full) return static_cast<int32_t>(i);
  for (const auto& [s, sink] : streams_) {
    if (s.compare(0, full.size(), full) == 0 &&
        (s.size() == full.size() || s[full.size()] == '/')) {
      auto* self = const_cast<Machine*>(this);
      self->paths_.push_back(full);
      return static_cast<int32_t>(paths_.size() - 1);
    }
  }
  return -1;
}

// The path of a container about to be pushed: the top object; the item of a list on top (one
// item is pickled as the item then APPEND) or the value under a key on top of a dict; else an
// item of the group the latest MARK opened. "A list then a container" is also how a list's
// empty item is followed by its sibling, so the first reading is taken only when it names a
// path of interest (sinks' paths are dict keys, then lists, never lists of lists of them), or
// when the new container is no list (a list's items, as a snapshot's, are all of one kind).
int32_t PickleReader::Machine::ChildPath(PickleKind kind) const {
  if (stack_.empty()) return 0;
  const PickleValue& top = stack_.back();
  const auto path_of = [this](const PickleValue& c) { return containers_[c.ref].path; };
  if (top.kind == PickleKind::kList) {
    const int32_t p = PathId(path_of(top), "*");
    if (p >= 0 || kind != PickleKind::kList) return p;  // a sibling would be a list too
  }
  const size_t n_all = stack_.size();
  if (top.kind == PickleKind::kStr && n_all >= 2 && stack_[n_all - 2].kind == PickleKind::kDict) {
    const int32_t p = PathId(path_of(stack_[n_all - 2]), strings_.Get(top.ref));
    if (p >= 0) return p;
  }
  if (marks_.empty() || marks_.back() == 0) return -1;
  const size_t m = marks_.back();
  const PickleValue& owner = stack_[m - 1];
  if (owner.kind == PickleKind::kList) return PathId(path_of(owner), "*");
  if (owner.kind == PickleKind::kDict && (n_all - m) % 2 == 1 && top.kind == PickleKind::kStr)
    return PathId(path_of(owner), strings_.Get(top.ref));
  return -1;
}

StatusOr<PickleValue> PickleReader::Machine::NewContainer(PickleKind k) {
  uint32_t id;
  if (!free_.empty()) {
    id = free_.back();
    free_.pop_back();
    containers_[id] = Container{};
  } else {
    id = static_cast<uint32_t>(containers_.size());
    containers_.emplace_back();
  }
  Container& c = containers_[id];
  c.kind = k;
  c.free = false;
  c.path = k == PickleKind::kTuple ? -1 : ChildPath(k);
  if (c.path >= 0) {
    if (path_count_.size() <= static_cast<size_t>(c.path)) path_count_.resize(c.path + 1);
    c.ordinal = path_count_[c.path]++;
  }
  PickleValue v = Scalar(k);
  v.ref = id;
  return v;
}

const PickleReader::Sink* PickleReader::Machine::SinkFor(int32_t path) const {
  if (path < 0) return nullptr;
  for (const auto& [s, sink] : streams_)
    if (s == paths_[path]) return &sink;
  return nullptr;
}

Status PickleReader::Machine::AppendTo(Container& c, const PickleValue& item) {
  if (item.IsContainer()) {
    const int d = containers_[item.ref].depth + 1;
    if (d > kMaxDepth)
      return Fail(fmt::format("containers nested deeper than {} levels", kMaxDepth));
    c.depth = std::max<uint16_t>(c.depth, static_cast<uint16_t>(d));
  }
  c.items.push_back(item);
  return Status::Ok();
}

// Moves stack_[from..] into `target` (a list, set or dict); streamed lists hand them to a sink.
Status PickleReader::Machine::AddItems(PickleValue target, size_t from) {
  if (!target.IsContainer() || target.kind == PickleKind::kTuple)
    return Fail("items added to a value that is not a list, set or dict");
  Container& c = containers_[target.ref];
  if (c.kind == PickleKind::kDict && (stack_.size() - from) % 2 != 0)
    return Fail("a dict given a key without a value");
  const Sink* sink = c.kind == PickleKind::kList ? SinkFor(c.path) : nullptr;
  const uint32_t ordinal = c.ordinal;
  std::vector<PickleValue> items(stack_.begin() + from, stack_.end());
  stack_.resize(from);
  for (const PickleValue& item : items) {
    if (sink != nullptr) {
      Status s = (*sink)(ordinal, item);
      if (!s.ok()) return Fail(s.message());
      continue;
    }
    TRAINPROF_RETURN_IF_ERROR(AppendTo(containers_[target.ref], item));
  }
  return Status::Ok();
}

Status PickleReader::Machine::Tuple(size_t from) {
  TRAINPROF_ASSIGN_OR_RETURN(PickleValue t, NewContainer(PickleKind::kTuple));
  std::vector<PickleValue> items(stack_.begin() + from, stack_.end());
  stack_.resize(from);
  for (const PickleValue& item : items)
    TRAINPROF_RETURN_IF_ERROR(AppendTo(containers_[t.ref], item));
  return Push(t);
}

Status PickleReader::Machine::Put(int64_t slot) {
  if (stack_.empty()) return Fail("a memo PUT with an empty stack");
  const PickleValue v = stack_.back();
  PickleValue* dst;
  if (slot < 0) return Fail("a negative memo index");
  if (static_cast<size_t>(slot) == memo_.size()) {
    memo_.push_back({});
    dst = &memo_.back();
  } else if (static_cast<size_t>(slot) < memo_.size()) {
    dst = &memo_[slot];
  } else {
    dst = &memo_far_[slot];
  }
  if (dst->IsContainer() && containers_[dst->ref].memo_slot == slot)
    containers_[dst->ref].memo_slot = -1;
  *dst = v;
  if (v.IsContainer()) {
    Container& c = containers_[v.ref];
    if (c.memo_slot >= 0) c.shared = true;
    c.memo_slot = slot;
  }
  return Status::Ok();
}

Status PickleReader::Machine::Get(int64_t slot) {
  const PickleValue* v = nullptr;
  if (slot >= 0 && static_cast<size_t>(slot) < memo_.size()) {
    v = &memo_[slot];
  } else if (auto it = memo_far_.find(slot); it != memo_far_.end()) {
    v = &it->second;
  }
  if (v == nullptr) return Fail(fmt::format("memo GET of index {}, which was never stored", slot));
  // A container given back (Release) and referred to again: only a part of a streamed entry that
  // its consumer did not keep can be; it reads as None.
  if (v->kind == PickleKind::kToken && v->ref == kGoneToken) return Push(Scalar(PickleKind::kNone));
  if (v->IsContainer()) containers_[v->ref].shared = true;
  return Push(*v);
}

Status PickleReader::Machine::PushString(PickleInput& in, int64_t n, PickleKind k) {
  if (n > kMaxLength) return Fail(fmt::format("a {}-byte value (more than 4 GiB)", n));
  scratch_.clear();
  TRAINPROF_RETURN_IF_ERROR(in.Append(
      n, &scratch_, fmt::format("a {}-byte {}", n, k == PickleKind::kStr ? "str" : "bytes")));
  PickleValue v = Scalar(k);
  v.ref = strings_.Intern(scratch_);
  return Push(v);
}

// LONG1/LONG4: little-endian two's complement.
Status PickleReader::Machine::PushLong(std::string_view le) {
  const size_t n = le.size();
  if (n == 0) return Push(Scalar(PickleKind::kInt, 0));
  const bool negative = (static_cast<uint8_t>(le[n - 1]) & 0x80) != 0;
  size_t used = n;  // drop sign-extension bytes
  while (used > 1 && static_cast<uint8_t>(le[used - 1]) == (negative ? 0xff : 0x00)) --used;
  if (used <= 8) {
    uint64_t u = negative ? ~uint64_t{0} : 0;
    for (size_t i = 0; i < used; ++i) {
      u &= ~(uint64_t{0xff} << (8 * i));
      u |= uint64_t{static_cast<uint8_t>(le[i])} << (8 * i);
    }
    const bool fits = negative ? static_cast<int64_t>(u) < 0 : (u >> 63) == 0;
    if (fits || negative) return Push(Scalar(PickleKind::kInt, static_cast<int64_t>(u)));
    return Push(Scalar(PickleKind::kUInt, static_cast<int64_t>(u)));
  }
  double d = 0;
  for (size_t i = n; i-- > 0;) d = d * 256 + static_cast<uint8_t>(le[i]);
  if (negative) d -= std::ldexp(1.0, static_cast<int>(8 * n));
  PickleValue v = Scalar(PickleKind::kBigInt);
  v.d = d;
  return Push(v);
}

StatusOr<int64_t> PickleReader::Machine::LengthField(PickleInput& in, size_t width) {
  TRAINPROF_ASSIGN_OR_RETURN(std::string_view b, in.Fixed(width));
  uint64_t n = 0;
  for (size_t i = 0; i < width; ++i) n |= uint64_t{static_cast<uint8_t>(b[i])} << (8 * i);
  if (n > static_cast<uint64_t>(kMaxLength))
    return Fail(fmt::format("a length of {} bytes (more than 4 GiB)", n));
  return static_cast<int64_t>(n);
}

}  // namespace trainprof::snapshot
