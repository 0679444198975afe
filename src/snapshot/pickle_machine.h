// The pickle reader's machine (internal to src/snapshot/): a stack of small values, a memo,
// marks, and containers kept in one arena with a free list. pickle_reader.cc has the stack and
// container operations, pickle_opcodes.cc the opcodes.
#pragma once

#include <deque>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "snapshot/pickle_input.h"
#include "snapshot/pickle_reader.h"
#include "snapshot/pickle_strings.h"

namespace trainprof::snapshot {

constexpr uint32_t kGoneToken = 0xffffffffu;  // a memo slot whose container was released

struct Container {
  PickleKind kind = PickleKind::kList;
  bool shared = false;  // referred to from more than one place (memo GET, DUP)
  bool free = true;
  uint16_t depth = 0;  // containers nested inside, as appended
  int32_t path = -1;   // a path of interest, or -1
  uint32_t ordinal = 0;
  int64_t memo_slot = -1;
  std::vector<PickleValue> items;
};

inline PickleValue Scalar(PickleKind k, int64_t i = 0) {
  PickleValue v;
  v.kind = k;
  v.i = i;
  return v;
}

class PickleReader::Machine {
 public:
  Machine() { paths_.push_back(""); }

  void StreamItems(std::string path, Sink sink) { streams_.emplace_back(std::move(path), sink); }

  StatusOr<PickleValue> Run(PickleInput& in);

  std::string_view Str(const PickleValue& v) const {
    if (v.kind != PickleKind::kStr && v.kind != PickleKind::kBytes) return {};
    return strings_.Get(v.ref);
  }
  const std::vector<PickleValue>& Items(const PickleValue& v) const {
    static const std::vector<PickleValue> kEmpty;
    return v.IsContainer() ? containers_[v.ref].items : kEmpty;
  }
  void Release(const PickleValue& v, int depth);
  void Replace(const PickleValue& c, uint32_t token);
  size_t live() const { return containers_.size() - free_.size(); }
  int64_t offset = 0;

 private:
  Status Step(uint8_t op, PickleInput& in);
  Status Scalars(uint8_t op, PickleInput& in, bool* done);
  Status Strings(uint8_t op, PickleInput& in, bool* done);
  Status Containers(uint8_t op, bool* done);
  Status StackOps(uint8_t op, PickleInput& in, bool* done);
  Status NewAndPush(PickleKind k);
  size_t Avail() const;
  Status Need(size_t n, std::string_view op) const;
  Status Push(PickleValue v);
  StatusOr<PickleValue> Pop(std::string_view why);
  StatusOr<size_t> PopMark();
  StatusOr<PickleValue> NewContainer(PickleKind k);
  Status AddItems(PickleValue target, size_t from);
  Status AppendTo(Container& c, const PickleValue& item);
  Status Put(int64_t slot);
  Status Get(int64_t slot);
  Status PushString(PickleInput& in, int64_t n, PickleKind k);
  Status PushLong(std::string_view le);
  StatusOr<int64_t> LengthField(PickleInput& in, size_t width);
  Status Tuple(size_t from);
  int32_t ChildPath(PickleKind kind) const;
  int32_t PathId(int32_t parent, std::string_view key) const;
  const Sink* SinkFor(int32_t path) const;
  Status Fail(std::string_view what) const { return InvalidArgument(std::string(what)); }

  std::vector<PickleValue> stack_;
  std::vector<size_t> marks_;
  std::vector<PickleValue> memo_;
  std::unordered_map<int64_t, PickleValue> memo_far_;
  std::deque<Container> containers_;
  std::vector<uint32_t> free_;
  StringTable strings_;
  std::vector<std::string> paths_;
  std::vector<uint32_t> path_count_;
  std::vector<std::pair<std::string, Sink>> streams_;
  std::string scratch_;
  friend class PickleReader;
};

}  // namespace trainprof::snapshot
