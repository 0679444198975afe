// A safe, streaming reader of Python pickles (protocols 2-5) that holds plain data only: dicts,
// lists, tuples, sets, str, bytes, ints, floats, bools and None. A pickle that names a global
// (GLOBAL, STACK_GLOBAL, INST, OBJ), builds or reduces an object (REDUCE, BUILD, NEWOBJ) or asks
// for a persistent id is refused: nothing in the file is ever executed or imported.
//
// Large lists need not be kept: items appended to a list at a registered path ("device_traces/*",
// the lists inside the top dict's "device_traces") are handed to a sink as they are appended,
// and the sink gives their containers back (Release), so memory stays bounded by what the sink
// keeps. A sink may also Replace a memoised container by a token of its own (an interned stack),
// so a later reference to the same object (pickle's memo GET) reads as the token.
//
//   PickleReader r;
//   r.StreamItems("device_traces/*", [&](uint32_t list, PickleValue item) -> Status {
//     ... r.Find(item, "action") ...;
//     r.Release(item);
//     return Status::Ok();
//   });
//   StatusOr<PickleValue> top = r.ReadFile("memory_snapshot.pickle");
//
// Errors are one line: "<file>: byte <offset>: <what>", e.g. "x.pickle: byte 37: opcode REDUCE
// (0x52) refused: the pickle calls a Python object; trainprof reads plain data only". A file cut
// short, an unknown opcode, nesting deeper than kMaxDepth, or a length larger than the bytes left
// are errors, never an allocation of the claimed size.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "trainprof/status.h"

namespace trainprof::trace {
class ByteSource;
}

namespace trainprof::snapshot {

enum class PickleKind : uint8_t {
  kNone,
  kBool,
  kInt,     // fits int64
  kUInt,    // in [2^63, 2^64): u64 bits in `i`
  kBigInt,  // wider: only its approximate value, in `d`
  kFloat,
  kStr,    // `ref`: string id
  kBytes,  // `ref`: string id
  kList,   // `ref`: container id (also sets)
  kTuple,
  kDict,
  kToken,  // `ref`: a sink's own id, set with Replace()
};

struct PickleValue {
  PickleKind kind = PickleKind::kNone;
  uint32_t ref = 0;
  union {
    int64_t i = 0;
    double d;
  };
  bool IsContainer() const {
    return kind == PickleKind::kList || kind == PickleKind::kTuple || kind == PickleKind::kDict;
  }
};

class PickleReader {
 public:
  static constexpr int kMaxDepth = 200;             // containers inside containers
  static constexpr size_t kMaxStack = 1 << 20;      // values on the stack at once
  static constexpr int64_t kMaxLength = 1LL << 32;  // a str, bytes or int's bytes

  // Called per item appended to a list at the path; `list` counts that path's lists from 0.
  using Sink = std::function<Status(uint32_t list, const PickleValue& item)>;

  PickleReader();
  ~PickleReader();
  PickleReader(const PickleReader&) = delete;
  PickleReader& operator=(const PickleReader&) = delete;

  // Paths are dict keys and "*" (a list's items) joined by '/', from the top object.
  void StreamItems(std::string path, Sink sink);

  // Reads the top object. `size` is the byte count when known (-1: unknown), which lets a
  // length claim beyond the end be refused before reading it. Errors name `name` and the byte.
  StatusOr<PickleValue> Read(trace::ByteSource* src, int64_t size, const std::string& name);
  // The file (gunzipped when it starts with gzip's magic). Errors: as Read, or cannot open.
  StatusOr<PickleValue> ReadFile(const std::string& path);
  StatusOr<PickleValue> ReadBytes(std::string_view bytes, const std::string& name);

  // Accessors. Str() of a non-string is ""; Items() of a non-container is empty; a dict's items
  // alternate key, value.
  std::string_view Str(const PickleValue& v) const;
  const std::vector<PickleValue>& Items(const PickleValue& v) const;
  // The value of dict key `key` (a str key), or nullptr.
  const PickleValue* Find(const PickleValue& dict, std::string_view key) const;
  // Int, UInt, BigInt, Float and Bool as int64 (UInt wraps to its bits); else `fallback`.
  int64_t Int(const PickleValue* v, int64_t fallback = 0) const;

  // Gives back the containers of `v` that nothing else refers to (no memo GET, no DUP) and
  // forgets their memo slots; a later GET of one of them reads as None.
  void Release(const PickleValue& v);
  // A memoised container's memo slot now holds `token` instead (kToken, ref = token).
  void Replace(const PickleValue& container, uint32_t token);

  // Bytes read so far, containers alive (tests, the benchmark).
  int64_t offset() const;
  size_t live_containers() const;

 private:
  class Machine;
  std::unique_ptr<Machine> m_;
};

}  // namespace trainprof::snapshot
