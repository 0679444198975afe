// The JSON half of the trace reader: a window of decoded bytes over a ByteSource, and a scanner
// that reads strings, numbers and members inside it without building a DOM. It knows JSON, not
// Kineto (kineto_reader.cc is the half that knows Kineto).
//
// Every scan function works on [p, e) and returns kOk (p moved past what it read), kMore (the
// value runs past e: refill the window and scan the unit again from its start) or kErr (the
// scanner's err() and err_at() say what and where). A "unit" is whatever the caller commits at
// once (one trace event, one top-level member); a unit larger than the window's limit is skipped
// by SkipUnit without ever being held whole.
//
//   Window w(src, 4 << 20, 64 << 20);
//   Scanner s;
//   const char* p = w.cur();
//   Scalar v;
//   if (s.Value(p, w.end(), &v, &scratch, 0) == ScanResult::kMore) { /* w.Refill(...), retry */ }
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "trace/byte_source.h"
#include "trainprof/status.h"

namespace trainprof::trace::json {

// What a scan function says: done (kOk), the unit runs past the window's end (kMore), or the
// input is not JSON (kErr: Scanner::err() and err_at() say what and where).
enum class ScanResult { kOk, kMore, kErr };

#define TRAINPROF_JSON_TRY(expr)                           \
  do {                                                     \
    ::trainprof::trace::json::ScanResult r_ = (expr);      \
    if (r_ != ::trainprof::trace::json::ScanResult::kOk) { \
      return r_;                                           \
    }                                                      \
  } while (false)

// A JSON value as scanned: its text (numbers, literals, whole objects and arrays) or its decoded
// value (strings). Views point into the window or into a scratch string.
// What a scanned value was: none (the member was absent), a string, a number (including the
// non-finite literals old writers left bare), or any other value (true, false, null, an object
// or an array, kept as text).
enum class ValueKind { kNone, kString, kNumber, kOtherValue };

struct Scalar {
  // Scalar::kString and the like, as the builder has always named them.
  static constexpr ValueKind kNone = ValueKind::kNone;
  static constexpr ValueKind kString = ValueKind::kString;
  static constexpr ValueKind kNumber = ValueKind::kNumber;
  static constexpr ValueKind kOtherValue = ValueKind::kOtherValue;

  ValueKind type = ValueKind::kNone;
  std::string_view text;
};

// The smallest window: room for the scanner's look-ahead (33 bytes for a short string).
inline constexpr size_t kMinWindowBytes = 4096;

class Window {
 public:
  // `chunk_bytes`: the window's first size; it doubles for a unit that does not fit, up to
  // `max_unit_bytes`.
  Window(ByteSource* src, size_t chunk_bytes, size_t max_unit_bytes);

  const char* cur() const { return buf_.data() + pos_; }
  const char* end() const { return buf_.data() + end_; }
  void Consume(const char* p) { pos_ = static_cast<size_t>(p - buf_.data()); }
  bool eof() const { return eof_; }
  bool empty() const { return base_offset_ == 0 && end_ == 0; }

  // Keeps the bytes from cur() and reads more after them. When they already fill the window it
  // grows; *too_large is set instead when that would pass max_unit_bytes. Errors: the source's.
  Status Refill(bool* too_large);

  // Decoded offsets: of a pointer into the window, of cur(), and of end().
  int64_t OffsetOf(const char* at) const { return base_offset_ + (at - buf_.data()); }
  int64_t cur_offset() const { return OffsetOf(cur()); }
  int64_t end_offset() const { return OffsetOf(end()); }
  // "byte B (line L, column C)" of a decoded offset inside the window.
  std::string Where(int64_t offset) const;

  // Streams past one unit too large to hold, from cur(): a value, or a "key": value member, up
  // to the ',', '}' or ']' that follows it at the unit's own depth (left unread). Nothing but
  // the window is kept. False when the data ends first. Errors: the source's.
  StatusOr<bool> SkipUnit();

  // Takes `buf` as the window, holding the `n` bytes of a whole part of the document (n below
  // buf.size()): nothing more is read from the source (a part cut from a gzip stream by the
  // thread that inflates it, kineto_gzip_parts.cc).
  void Adopt(RawBuffer buf, size_t n) {
    buf_ = std::move(buf);
    pos_ = 0, end_ = n;
    eof_ = true;
  }

  // Frees the bytes once the document is read. Read what is needed first: the offsets and
  // Where() no longer describe the document after it.
  // Returns the buffer (to be used again).
  RawBuffer Release() {
    RawBuffer b = std::move(buf_);
    buf_ = RawBuffer(0);
    pos_ = end_ = 0;
    return b;
  }

 private:
  void Discard();  // drops the bytes before cur(), keeping line and column counts

  ByteSource* src_;
  size_t max_unit_;
  RawBuffer buf_;
  size_t pos_ = 0, end_ = 0;
  bool eof_ = false;
  int64_t base_offset_ = 0;  // decoded offset of buf_[0]
  int64_t lines_ = 0;        // newlines before buf_[0]
  int64_t col_base_ = 0;     // bytes since the last newline, at buf_[0]
};

// A byte above the space: not JSON white space (nor a control character).
inline bool NotSpace(char c) { return static_cast<unsigned char>(c) > 0x20; }

// A string of plain ASCII (no escape, control or non-ASCII byte) that ends within the 32 bytes
// after its opening quote at p, as most keys and many values are: sets *out and moves p past
// the closing quote. False (p unmoved) sends the caller to Scanner::String.
inline bool ShortPlainString(const char*& p, const char* e, std::string_view* out) {
#if defined(__SSE2__)
  if (e - p < 33) return false;
  for (int k = 0; k < 32; k += 16) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 1 + k));
    const unsigned quote =
        static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(x, _mm_set1_epi8('"'))));
    // Signed compare: bytes >= 0x80 are negative, so "< 0x20" also catches non-ASCII.
    const unsigned odd = static_cast<unsigned>(_mm_movemask_epi8(_mm_or_si128(
        _mm_cmpeq_epi8(x, _mm_set1_epi8('\\')), _mm_cmplt_epi8(x, _mm_set1_epi8(0x20)))));
    const unsigned before = quote == 0 ? 0xFFFFu : (quote & (0u - quote)) - 1;  // below it
    if ((odd & before) != 0) return false;
    if (quote != 0) {
      const int n = k + __builtin_ctz(quote);
      *out = std::string_view(p + 1, static_cast<size_t>(n));
      p += n + 2;
      return true;
    }
  }
#else
  (void)p, (void)e, (void)out;
#endif
  return false;
}

// The first byte at or after c that is not an ASCII digit, or e.
inline const char* SkipDigits(const char* c, const char* e) {
#if defined(__SSE2__)
  while (e - c >= 16) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(c));
    const __m128i digit = _mm_and_si128(_mm_cmpgt_epi8(x, _mm_set1_epi8('0' - 1)),
                                        _mm_cmplt_epi8(x, _mm_set1_epi8('9' + 1)));
    const unsigned other = ~static_cast<unsigned>(_mm_movemask_epi8(digit)) & 0xFFFFu;
    if (other != 0) return c + __builtin_ctz(other);
    c += 16;
  }
#endif
  while (c < e && static_cast<unsigned>(*c - '0') < 10) ++c;
  return c;
}

class Scanner {
 public:
  // White space: most calls find none, or one space, inline; runs (a newline and an indent)
  // go sixteen bytes at a time.
  ScanResult Ws(const char*& p, const char* e) {
    if (p < e && NotSpace(*p)) return ScanResult::kOk;
    if (p + 1 < e && *p == ' ' && NotSpace(p[1])) {
      ++p;
      return ScanResult::kOk;
    }
    return WsRun(p, e);
  }
  ScanResult WsRun(const char*& p, const char* e);
  // White space, then `c` (what: how the error names it).
  ScanResult Expect(const char*& p, const char* e, char c, const char* what);
  ScanResult Fail(const char* at, std::string what);

  // p at the opening quote. Escapes are decoded into *scratch, malformed UTF-8 bytes become
  // U+FFFD; raw control characters are kept. Both are counted.
  ScanResult String(const char*& p, const char* e, std::string_view* out, std::string* scratch);
  ScanResult NumberOrLiteral(const char*& p, const char* e, Scalar* out);
  // -?(0|[1-9][0-9]*)(\.[0-9]+)? followed by a byte that cannot go on a number, as Kineto
  // writes them; false (p unmoved) for anything else, which NumberOrLiteral reads or rejects.
  static bool PlainNumber(const char*& p, const char* e, Scalar* out) {
    const char* d = p + (*p == '-');
    const char* c = SkipDigits(d, e);
    if (c == d || (*d == '0' && c - d > 1)) return false;
    if (c < e && *c == '.') {
      const char* f = c + 1;
      c = SkipDigits(f, e);
      if (c == f) return false;
    }
    if (c >= e || *c == 'e' || *c == 'E') return false;
    out->type = ValueKind::kNumber;
    out->text = std::string_view(p, static_cast<size_t>(c - p));
    p = c;
    return true;
  }
  // Value() with p at the value (no white space before it): plain strings and numbers inline.
  ScanResult ValueAt(const char*& p, const char* e, Scalar* out, std::string* scratch, int depth) {
    if (*p == '"') {
      if (ShortPlainString(p, e, &out->text)) {
        out->type = Scalar::kString;
        return ScanResult::kOk;
      }
    } else if (static_cast<unsigned>(*p - '0') < 10 || *p == '-') {
      if (PlainNumber(p, e, out)) return ScanResult::kOk;
    }
    return Value(p, e, out, scratch, depth);
  }
  // Any value; objects and arrays are checked and returned as their raw text.
  ScanResult Value(const char*& p, const char* e, Scalar* out, std::string* scratch, int depth);

  // p at '{': calls on(key, p, e) for each member with p at the value, which it must consume
  // (returning kOk), then reads the ',' or '}' after it. `where` ends the error text ("in an
  // event").
  template <class OnMember>
  ScanResult Members(const char*& p, const char* e, const char* where, OnMember&& on);

  // Strings read with raw control characters, and with malformed UTF-8 (replaced).
  struct Counts {
    int64_t control = 0, malformed = 0;
  };
  Counts counts() const { return {control_strings_, malformed_strings_}; }
  // Put back as they were before a unit that will be scanned again.
  void set_counts(Counts c) { control_strings_ = c.control, malformed_strings_ = c.malformed; }

  const char* err_at() const { return err_at_; }
  const std::string& err() const { return err_; }

 private:
  const char* err_at_ = nullptr;
  std::string err_;
  int64_t control_strings_ = 0, malformed_strings_ = 0;
  std::string key_, tmp_;
};

// `key` == `lit`, as a length check and a fixed-size compare the compiler inlines (string_view's
// == calls memcmp: 4 % of reading a trace, for the member names alone).
template <size_t N>
inline bool KeyIs(std::string_view key, const char (&lit)[N]) {
  return key.size() == N - 1 && std::memcmp(key.data(), lit, N - 1) == 0;
}

// Numbers as the trace writes them.
// Microseconds as text -> integer nanoseconds, exact for up to three decimals, rounded half away
// from zero beyond. nullopt: NaN, Infinity or out of range.
std::optional<int64_t> MicrosToNs(std::string_view t);
// Reads the ASCII digits from c on into *v (v * 10 + digit; it wraps past 19 digits), eight (then
// four) at a time where it can; returns the first byte after them.
inline const char* AccumulateDigits(const char* c, const char* e, uint64_t* v) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  while (e - c >= 8) {
    uint64_t x;
    std::memcpy(&x, c, 8);
    // Eight digits: every high nibble is 3, and adding 6 to each byte carries none out of it.
    const uint64_t hi = 0xF0F0F0F0F0F0F0F0ULL;
    if (((x & hi) | (((x + 0x0606060606060606ULL) & hi) >> 4)) != 0x3333333333333333ULL) break;
    x -= 0x3030303030303030ULL;
    x = x * 10 + (x >> 8);  // pairs of digits in alternate bytes
    x = (((x & 0x000000FF000000FFULL) * (100 + (1000000ULL << 32))) +
         (((x >> 16) & 0x000000FF000000FFULL) * (1 + (10000ULL << 32)))) >>
        32;
    *v = *v * 100000000ULL + x;
    c += 8;
  }
  // Four more the same way: most ids have 4-7 digits, and a timestamp's whole part 13.
  if (e - c >= 4) {
    uint32_t x;
    std::memcpy(&x, c, 4);
    if (((x & 0xF0F0F0F0U) | (((x + 0x06060606U) & 0xF0F0F0F0U) >> 4)) == 0x33333333U) {
      x -= 0x30303030U;
      x = x * 10 + (x >> 8);  // the first pair in byte 0, the second in byte 2
      *v = *v * 10000 + (x & 0xFF) * 100 + ((x >> 16) & 0xFF);
      c += 4;
    }
  }
#endif
  for (; c < e && static_cast<unsigned>(*c - '0') < 10; ++c)
    *v = *v * 10 + static_cast<uint64_t>(*c - '0');
  return c;
}

// An integer, also from "123" strings' contents; values past INT64_MAX (unsigned 64-bit ids)
// wrap to the same 64 bits, so equal ids stay equal. nullopt: not a number. ToIntSlow is the
// general path (signs, exponents, long numbers) that ToInt takes for all but plain digits.
std::optional<int64_t> ToIntSlow(std::string_view t);
inline std::optional<int64_t> ToInt(std::string_view t) {
  if (!t.empty() && t.size() <= 18) {  // digits only, no overflow: by hand
    const char* d = t.data() + (t[0] == '-');
    const char* e = t.data() + t.size();
    uint64_t u = 0;
    const char* c = AccumulateDigits(d, e, &u);
    const auto v = static_cast<int64_t>(u);
    if (c == e && c > d) return t[0] == '-' ? -v : v;
  }
  return ToIntSlow(t);
}
double ToDouble(std::string_view t);

template <class OnMember>
ScanResult Scanner::Members(const char*& p, const char* e, const char* where, OnMember&& on) {
  ++p;
  TRAINPROF_JSON_TRY(Ws(p, e));
  if (*p == '}') {
    ++p;
    return ScanResult::kOk;
  }
  for (;;) {
    TRAINPROF_JSON_TRY(Ws(p, e));
    if (*p != '"') return Fail(p, "expected a key string");
    std::string_view key;
    if (!ShortPlainString(p, e, &key)) TRAINPROF_JSON_TRY(String(p, e, &key, &key_));
    if (e - p > 2 && p[0] == ':' && p[1] == ' ' && NotSpace(p[2])) {
      p += 2;  // Kineto's '": "'
    } else {
      TRAINPROF_JSON_TRY(Expect(p, e, ':', "':' after a key"));
      TRAINPROF_JSON_TRY(Ws(p, e));
    }
    TRAINPROF_JSON_TRY(on(key, p, e));
    TRAINPROF_JSON_TRY(Ws(p, e));
    if (*p == ',') {
      ++p;
      continue;
    }
    if (*p == '}') {
      ++p;
      return ScanResult::kOk;
    }
    return Fail(p, std::string("expected ',' or '}'") + where);
  }
}

}  // namespace trainprof::trace::json
