#include "operators/pickle_writer.h"

#include <bit>
#include <cstring>

#include "base/text.h"

namespace trainprof::torchlib {
namespace {

// Protocol 2 opcodes (Lib/pickletools.py documents each).
constexpr char kProto = '\x80';
constexpr char kStop = '.';
constexpr char kMark = '(';
constexpr char kEmptyDict = '}';
constexpr char kSetItems = 'u';
constexpr char kEmptyList = ']';
constexpr char kAppends = 'e';
constexpr char kBinInt = 'J';
constexpr char kLong1 = '\x8a';
constexpr char kBinUnicode = 'X';
constexpr char kBinFloat = 'G';
constexpr char kNone = 'N';
constexpr char kTrue = '\x88';
constexpr char kFalse = '\x89';
constexpr char kTuple2 = '\x86';

void AppendLe32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

}  // namespace

PickleWriter::PickleWriter() {
  out_ += kProto;
  out_ += '\x02';
}

// An empty container, then a mark; End() adds everything after the mark at once.
void PickleWriter::BeginDict() {
  out_ += kEmptyDict;
  out_ += kMark;
  open_.push_back(kSetItems);
}

void PickleWriter::BeginList() {
  out_ += kEmptyList;
  out_ += kMark;
  open_.push_back(kAppends);
}

void PickleWriter::End() {
  out_ += open_.back();
  open_.pop_back();
}

void PickleWriter::Str(std::string_view s) {
  const std::string v = base::ValidUtf8(s);
  out_ += kBinUnicode;
  AppendLe32(out_, static_cast<uint32_t>(v.size()));
  out_ += v;
}

void PickleWriter::Int(int64_t v) {
  if (v >= INT32_MIN && v <= INT32_MAX) {
    out_ += kBinInt;
    AppendLe32(out_, static_cast<uint32_t>(static_cast<int32_t>(v)));
    return;
  }
  unsigned char b[8];
  for (int i = 0; i < 8; ++i)
    b[i] = static_cast<unsigned char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff);
  Long(b, 8);
}

void PickleWriter::UInt(uint64_t v) {
  if (v <= INT32_MAX) return Int(static_cast<int64_t>(v));
  // Nine bytes: a zero top byte keeps a value above INT64_MAX positive.
  unsigned char b[9] = {};
  for (int i = 0; i < 8; ++i) b[i] = static_cast<unsigned char>((v >> (8 * i)) & 0xff);
  Long(b, 9);
}

void PickleWriter::Long(const unsigned char* le, size_t n) {
  out_ += kLong1;
  out_ += static_cast<char>(n);
  out_.append(reinterpret_cast<const char*>(le), n);
}

void PickleWriter::Float(double v) {
  const auto bits = std::bit_cast<uint64_t>(v);
  out_ += kBinFloat;
  for (int i = 7; i >= 0; --i) out_ += static_cast<char>((bits >> (8 * i)) & 0xff);
}

void PickleWriter::Bool(bool v) { out_ += v ? kTrue : kFalse; }
void PickleWriter::None() { out_ += kNone; }

void PickleWriter::Tuple2Int(int64_t a, int64_t b) {
  Int(a);
  Int(b);
  out_ += kTuple2;
}

std::string PickleWriter::Finish() {
  out_ += kStop;
  return std::move(out_);
}

}  // namespace trainprof::torchlib
