// The pickle reader's bytes: a window over a trace::ByteSource that knows its offset and, where
// the size is known, how many bytes are left, so a length claim is checked before any read.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "trainprof/status.h"

namespace trainprof::trace {
class ByteSource;
}

namespace trainprof::snapshot {

class PickleInput {
 public:
  // `size`: the byte count when known, else -1. `name` goes into every error.
  PickleInput(trace::ByteSource* src, int64_t size, std::string name);

  int64_t offset() const { return base_ + static_cast<int64_t>(pos_); }
  // Where the opcode being read starts: the place errors name.
  void set_opcode_offset(int64_t at) { op_at_ = at; }
  const std::string& name() const { return name_; }

  // One byte; an error at the end of the data ("cut short").
  StatusOr<uint8_t> Byte();
  // `n` bytes (n <= kWindow) as a view valid until the next call.
  StatusOr<std::string_view> Fixed(size_t n);
  // `n` bytes appended to `out`, read in pieces: a claim beyond the end fails without
  // allocating it. `what` names the value in the error ("a 1073741824-byte str").
  Status Append(int64_t n, std::string* out, std::string_view what);
  // "<name>: byte <at>: <what>".
  Status Error(int64_t at, std::string_view what) const;

  static constexpr size_t kWindow = 1 << 20;

 private:
  Status Fill(size_t need);  // makes `need` bytes available from pos_, or errors
  Status CutShort(int64_t at, std::string_view what) const;

  trace::ByteSource* src_;
  int64_t size_;
  std::string name_;
  std::string buf_;
  size_t pos_ = 0, end_ = 0;
  int64_t base_ = 0;  // file offset of buf_[0]
  int64_t op_at_ = 0;
  bool eof_ = false;
};

}  // namespace trainprof::snapshot
