#include "snapshot/pickle_input.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "trace/byte_source.h"

namespace trainprof::snapshot {

PickleInput::PickleInput(trace::ByteSource* src, int64_t size, std::string name)
    : src_(src), size_(size), name_(std::move(name)) {
  buf_.resize(kWindow);
}

Status PickleInput::Error(int64_t at, std::string_view what) const {
  return InvalidArgument(fmt::format("{}: byte {}: {}", name_, at, what));
}

Status PickleInput::CutShort(int64_t at, std::string_view what) const {
  return DataLoss(fmt::format("{}: byte {}: cut short: the file ends inside {}", name_, at, what));
}

Status PickleInput::Fill(size_t need) {
  if (end_ - pos_ >= need) return Status::Ok();
  if (pos_ > 0) {  // keep the unread bytes at the front
    std::memmove(buf_.data(), buf_.data() + pos_, end_ - pos_);
    base_ += static_cast<int64_t>(pos_);
    end_ -= pos_;
    pos_ = 0;
  }
  while (end_ < need && !eof_) {
    TRAINPROF_ASSIGN_OR_RETURN(size_t n, src_->Read(buf_.data() + end_, buf_.size() - end_));
    if (n == 0) eof_ = true;
    end_ += n;
  }
  if (end_ - pos_ < need) return CutShort(op_at_, fmt::format("a {}-byte field", need));
  return Status::Ok();
}

StatusOr<uint8_t> PickleInput::Byte() {
  if (pos_ == end_) {
    Status s = Fill(1);
    if (!s.ok()) return CutShort(op_at_, "the pickle, before its STOP opcode");
  }
  return static_cast<uint8_t>(buf_[pos_++]);
}

StatusOr<std::string_view> PickleInput::Fixed(size_t n) {
  TRAINPROF_RETURN_IF_ERROR(Fill(n));
  std::string_view v(buf_.data() + pos_, n);
  pos_ += n;
  return v;
}

Status PickleInput::Append(int64_t n, std::string* out, std::string_view what) {
  const int64_t at = op_at_;
  if (n < 0) return Error(at, fmt::format("{} with a negative length", what));
  if (size_ >= 0 && n > size_ - at) {
    return Error(at, fmt::format("{} claims {} bytes, but only {} are left in the file", what, n,
                                 size_ - offset()));
  }
  while (n > 0) {
    if (pos_ == end_) {
      Status s = Fill(1);
      if (!s.ok()) return CutShort(at, fmt::format("{} ({} of its bytes are missing)", what, n));
    }
    const size_t take = static_cast<size_t>(std::min<int64_t>(n, end_ - pos_));
    out->append(buf_.data() + pos_, take);
    pos_ += take;
    n -= static_cast<int64_t>(take);
  }
  return Status::Ok();
}

}  // namespace trainprof::snapshot
