#include "trace/kineto/json_scanner.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "base/text.h"
#include "trace/kineto/json_structural.h"

namespace trainprof::trace::json {
namespace {

// Pretty-printed traces have a newline every few dozen bytes, so this counts sixteen bytes at a
// time (SSE2), or thirty-two where the CPU has AVX2, rather than calling memchr once a line.
int64_t CountNewlinesSse2(const char* b, const char* e) {
  int64_t n = 0;
#if defined(__SSE2__)
  // Per-byte counters (a match is -1, subtracted), summed into n before they can overflow.
  const __m128i nl = _mm_set1_epi8('\n'), zero = _mm_setzero_si128();
  auto flush = [&](__m128i acc) {
    __m128i sums = _mm_sad_epu8(acc, zero);
    n += _mm_cvtsi128_si64(_mm_add_epi64(sums, _mm_unpackhi_epi64(sums, sums)));
  };
  __m128i acc = zero;
  int rounds = 0;
  for (; e - b >= 16; b += 16) {
    __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b));
    acc = _mm_sub_epi8(acc, _mm_cmpeq_epi8(x, nl));
    if (++rounds == 255) {
      flush(acc);
      acc = zero;
      rounds = 0;
    }
  }
  flush(acc);
#endif
  for (; b < e; ++b) n += *b == '\n';
  return n;
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2"))) int64_t CountNewlinesAvx2(const char* b, const char* e) {
  int64_t n = 0;
  const __m256i nl = _mm256_set1_epi8('\n'), zero = _mm256_setzero_si256();
  while (e - b >= 32) {
    __m256i acc = zero;  // per-byte counts of up to 255 blocks
    for (int r = 0; r < 255 && e - b >= 32; ++r, b += 32)
      acc = _mm256_sub_epi8(
          acc, _mm256_cmpeq_epi8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b)), nl));
    const __m256i sums = _mm256_sad_epu8(acc, zero);
    n += _mm256_extract_epi64(sums, 0) + _mm256_extract_epi64(sums, 1) +
         _mm256_extract_epi64(sums, 2) + _mm256_extract_epi64(sums, 3);
  }
  return n + CountNewlinesSse2(b, e);
}
#endif

int64_t CountNewlines(const char* b, const char* e) {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2) return CountNewlinesAvx2(b, e);
#endif
  return CountNewlinesSse2(b, e);
}

// First byte in [p, e) that ends a string's fast path: '"', '\\', a control character or a
// byte >= 0x80 (to check its UTF-8),
// sixteen bytes at a time with SSE2 (every x86-64 has it), else eight with the classic "has a
// zero byte" bit trick.
const char* FindStringSpecial(const char* p, const char* e) {
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'),
                space_minus_1 = _mm_set1_epi8(0x1F);
  while (e - p >= 16) {
    __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, backslash)),
                               _mm_cmpeq_epi8(_mm_max_epu8(x, space_minus_1), space_minus_1));
    int mask = _mm_movemask_epi8(hit) | _mm_movemask_epi8(x);  // and bytes >= 0x80
    if (mask != 0) return p + __builtin_ctz(static_cast<unsigned>(mask));
    p += 16;
  }
#else
  constexpr uint64_t kOnes = 0x0101010101010101ULL, kHigh = 0x8080808080808080ULL;
  auto has_zero = [](uint64_t v) { return (v - kOnes) & ~v & kHigh; };
  while (e - p >= 8) {
    uint64_t x;
    std::memcpy(&x, p, 8);
    uint64_t m = has_zero(x ^ (kOnes * '"')) | has_zero(x ^ (kOnes * '\\')) |
                 ((x - kOnes * 0x20) & ~x & kHigh) | (x & kHigh);
    if (m != 0) break;
    p += 8;
  }
#endif
  while (p < e && *p != '"' && *p != '\\' && static_cast<unsigned char>(*p) >= 0x20 &&
         static_cast<unsigned char>(*p) < 0x80)
    ++p;
  return p;
}

void AppendUtf8(std::string* out, uint32_t cp) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// The character a one-letter JSON escape stands for, or 0.
char SimpleEscape(char c) {
  switch (c) {
    case '"':
    case '\\':
    case '/':
      return c;
    case 'b':
      return '\b';
    case 'f':
      return '\f';
    case 'n':
      return '\n';
    case 'r':
      return '\r';
    case 't':
      return '\t';
    default:
      return 0;
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Window

Window::Window(ByteSource* src, size_t chunk_bytes, size_t max_unit_bytes)
    : src_(src),
      max_unit_(std::max(max_unit_bytes, chunk_bytes)),
      buf_(std::max<size_t>(chunk_bytes, kMinWindowBytes)) {}

void Window::Discard() {
  if (pos_ == 0) return;
  const char* b = buf_.data();
  int64_t nl = CountNewlines(b, b + pos_);
  if (nl > 0) {
    const void* last = memrchr(b, '\n', pos_);
    col_base_ = static_cast<int64_t>(b + pos_ - static_cast<const char*>(last) - 1);
  } else {
    col_base_ += static_cast<int64_t>(pos_);
  }
  lines_ += nl;
  base_offset_ += static_cast<int64_t>(pos_);
  std::memmove(buf_.data(), buf_.data() + pos_, end_ - pos_);
  end_ -= pos_;
  pos_ = 0;
}

Status Window::Refill(bool* too_large) {
  *too_large = false;
  Discard();
  if (end_ == buf_.size()) {  // one unit larger than the window
    if (buf_.size() * 2 > max_unit_) {
      *too_large = true;
      return Status::Ok();
    }
    buf_.Grow(buf_.size() * 2, end_);
  }
  while (end_ < buf_.size() && !eof_) {
    TRAINPROF_ASSIGN_OR_RETURN(size_t n, src_->Read(buf_.data() + end_, buf_.size() - end_));
    if (n == 0) eof_ = true;
    end_ += n;
  }
  return Status::Ok();
}

std::string Window::Where(int64_t offset) const {
  int64_t rel = std::clamp<int64_t>(offset - base_offset_, 0, static_cast<int64_t>(end_));
  const char* b = buf_.data();
  int64_t nl = CountNewlines(b, b + rel);
  int64_t col = 0;
  if (nl > 0) {
    const void* last = memrchr(b, '\n', static_cast<size_t>(rel));
    col = b + rel - static_cast<const char*>(last) - 1;
  } else {
    col = col_base_ + rel;
  }
  return fmt::format("byte {} (line {}, column {})", offset, lines_ + nl + 1, col + 1);
}

// 64 bytes at a time (json_structural.h): only the brackets, commas and string bounds matter.
StatusOr<bool> Window::SkipUnit() {
  int64_t depth = 0;
  BlockCarry carry;
  for (;;) {
    const char* stop = FindUnitEnd(cur(), end(), &depth, &carry);
    if (stop != end()) {
      Consume(stop);
      return true;
    }
    Consume(end());
    if (eof_) return false;
    bool unused = false;
    TRAINPROF_RETURN_IF_ERROR(Refill(&unused));
  }
}

// ---------------------------------------------------------------------------------------------
// Scanner

ScanResult Scanner::WsRun(const char*& p, const char* e) {
#if defined(__SSE2__)
  const __m128i space = _mm_set1_epi8(' '), nl = _mm_set1_epi8('\n'), cr = _mm_set1_epi8('\r'),
                tab = _mm_set1_epi8('\t');
  while (e - p >= 16) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i ws = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, space), _mm_cmpeq_epi8(x, nl)),
                                    _mm_or_si128(_mm_cmpeq_epi8(x, cr), _mm_cmpeq_epi8(x, tab)));
    const unsigned other = ~static_cast<unsigned>(_mm_movemask_epi8(ws)) & 0xFFFFu;
    if (other != 0) {
      p += __builtin_ctz(other);
      return ScanResult::kOk;
    }
    p += 16;
  }
#endif
  while (p < e && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) ++p;
  return p < e ? ScanResult::kOk : ScanResult::kMore;
}

ScanResult Scanner::Expect(const char*& p, const char* e, char c, const char* what) {
  TRAINPROF_JSON_TRY(Ws(p, e));
  if (*p != c) return Fail(p, fmt::format("expected {}", what));
  ++p;
  return ScanResult::kOk;
}

ScanResult Scanner::Fail(const char* at, std::string what) {
  err_at_ = at;
  err_ = std::move(what);
  return ScanResult::kErr;
}

// Raw control characters (Kineto leaves tabs in names) are kept and counted. Well-formed UTF-8
// is kept as it is; a malformed byte becomes U+FFFD and is counted. Only escapes and malformed
// bytes make a copy.
ScanResult Scanner::String(const char*& p, const char* e, std::string_view* out,
                           std::string* scratch) {
  const char* s = p + 1;
  const char* q = s;
  bool control = false;
  for (;;) {  // in place while nothing needs changing
    q = FindStringSpecial(q, e);
    if (q == e) return ScanResult::kMore;
    if (*q == '"') {
      *out = std::string_view(s, static_cast<size_t>(q - s));
      p = q + 1;
      control_strings_ += control;
      return ScanResult::kOk;
    }
    if (*q == '\\') break;
    if (static_cast<unsigned char>(*q) < 0x20) {
      control = true;
      ++q;
      continue;
    }
    int n = base::Utf8SequenceLength(q, e);
    if (n < 0) return ScanResult::kMore;
    if (n == 0) break;
    q += n;
  }
  scratch->assign(s, q);
  const char* c = q;
  bool malformed = false;
  for (;;) {
    const char* run = FindStringSpecial(c, e);
    scratch->append(c, run);
    c = run;
    if (c >= e) return ScanResult::kMore;
    if (*c == '"') break;
    if (*c != '\\') {
      int n = static_cast<unsigned char>(*c) < 0x20 ? 1 : base::Utf8SequenceLength(c, e);
      if (n < 0) return ScanResult::kMore;
      control |= static_cast<unsigned char>(*c) < 0x20;
      malformed |= n == 0;
      if (n == 0)
        scratch->append("\xEF\xBF\xBD");
      else
        scratch->append(c, c + n);
      c += n == 0 ? 1 : n;
      continue;
    }
    if (c + 1 >= e) return ScanResult::kMore;
    char esc = c[1];
    c += 2;
    if (char plain = SimpleEscape(esc)) {
      scratch->push_back(plain);
      continue;
    }
    if (esc != 'u') return Fail(c - 1, "bad escape in a string");
    auto hex4 = [&](const char* h, uint32_t* v) -> ScanResult {
      if (e - h < 4) return ScanResult::kMore;
      *v = 0;
      for (int k = 0; k < 4; ++k) {
        int d = base::HexDigit(h[k]);
        if (d < 0) return Fail(h + k, "bad \\u escape in a string");
        *v = *v * 16 + static_cast<uint32_t>(d);
      }
      return ScanResult::kOk;
    };
    uint32_t cp = 0;
    TRAINPROF_JSON_TRY(hex4(c, &cp));
    c += 4;
    if (cp >= 0xD800 && cp < 0xDC00) {  // a surrogate pair's first half
      if (e - c < 6) return ScanResult::kMore;
      uint32_t lo = 0;
      if (c[0] == '\\' && c[1] == 'u' && hex4(c + 2, &lo) == ScanResult::kOk && lo >= 0xDC00 &&
          lo < 0xE000) {
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        c += 6;
      } else {
        err_at_ = nullptr;
        cp = 0xFFFD;
      }
    } else if (cp >= 0xDC00 && cp < 0xE000) {
      cp = 0xFFFD;
    }
    AppendUtf8(scratch, cp);
  }
  *out = *scratch;
  p = c + 1;
  control_strings_ += control;
  malformed_strings_ += malformed;
  return ScanResult::kOk;
}

ScanResult Scanner::NumberOrLiteral(const char*& p, const char* e, Scalar* out) {
  if (PlainNumber(p, e, out)) return ScanResult::kOk;
  const char* s = p;
  auto lit = [&](std::string_view word, ValueKind t) -> ScanResult {
    size_t have = std::min(word.size(), static_cast<size_t>(e - s));
    if (std::string_view(s, have) != word.substr(0, have))
      return Fail(s, "not JSON: unexpected character");
    if (have < word.size()) return ScanResult::kMore;
    p = s + word.size();
    out->type = t;
    out->text = std::string_view(s, word.size());
    return ScanResult::kOk;
  };
  switch (*s) {
    case 't':
      return lit("true", Scalar::kOtherValue);
    case 'f':
      return lit("false", Scalar::kOtherValue);
    case 'n':  // "nan": Kineto of 2021 wrote C's printf of non-finite doubles bare
      if (e - s >= 2 && s[1] == 'a') return lit("nan", Scalar::kNumber);
      return lit("null", Scalar::kOtherValue);
    case 'i':
      return lit("inf", Scalar::kNumber);
    case 'N':
      return lit("NaN", Scalar::kNumber);  // Python's json writes these
    case 'I':
      return lit("Infinity", Scalar::kNumber);
    default:
      break;
  }
  const char* c = s;
  if (*c == '-') {
    ++c;
    if (c < e && *c == 'I') return lit("-Infinity", Scalar::kNumber);
    if (c < e && *c == 'i') return lit("-inf", Scalar::kNumber);
    if (c < e && *c == 'n') return lit("-nan", Scalar::kNumber);
  }
  // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
  auto digits = [&]() -> int {
    int n = 0;
    while (c < e && *c >= '0' && *c <= '9') ++c, ++n;
    return n;
  };
  if (c >= e) return ScanResult::kMore;
  if (*c < '0' || *c > '9') return Fail(s, "not JSON: unexpected character");
  bool leading_zero = *c == '0';
  int n = digits();
  if (leading_zero && n > 1) return Fail(s, "not JSON: number with a leading zero");
  if (c < e && *c == '.') {
    ++c;
    if (digits() == 0) return c >= e ? ScanResult::kMore : Fail(c, "not JSON: digits expected");
  }
  if (c < e && (*c == 'e' || *c == 'E')) {
    ++c;
    if (c < e && (*c == '+' || *c == '-')) ++c;
    if (digits() == 0)
      return c >= e ? ScanResult::kMore : Fail(c, "not JSON: exponent digits expected");
  }
  if (c >= e) return ScanResult::kMore;  // the number may go on in the next chunk
  out->type = Scalar::kNumber;
  out->text = std::string_view(s, static_cast<size_t>(c - s));
  p = c;
  return ScanResult::kOk;
}

ScanResult Scanner::Value(const char*& p, const char* e, Scalar* out, std::string* scratch,
                          int depth) {
  TRAINPROF_JSON_TRY(Ws(p, e));
  const char* start = p;
  if (*p == '"') {
    if (!ShortPlainString(p, e, &out->text)) TRAINPROF_JSON_TRY(String(p, e, &out->text, scratch));
    out->type = Scalar::kString;
    return ScanResult::kOk;
  }
  if (*p != '{' && *p != '[') return NumberOrLiteral(p, e, out);
  if (depth > 64) return Fail(p, "nested too deeply (over 64 levels)");
  // Members and elements as ValueAt reads them (q at the value), plain strings and numbers
  // inline: shapes and dtypes ([[1, 512], []], ["float", ""]) are many small values.
  auto member = [&](std::string_view, const char*& q, const char* qe) {
    Scalar tmp;
    return ValueAt(q, qe, &tmp, &tmp_, depth + 1);
  };
  if (*p == '{') {
    TRAINPROF_JSON_TRY(Members(p, e, "", member));
  } else {
    ++p;
    TRAINPROF_JSON_TRY(Ws(p, e));
    if (*p == ']') {
      ++p;
    } else {
      for (;;) {
        TRAINPROF_JSON_TRY(Ws(p, e));
        TRAINPROF_JSON_TRY(member({}, p, e));
        TRAINPROF_JSON_TRY(Ws(p, e));
        if (*p == ',') {
          ++p;
          continue;
        }
        if (*p == ']') {
          ++p;
          break;
        }
        return Fail(p, "expected ',' or ']'");
      }
    }
  }
  out->type = Scalar::kOtherValue;
  out->text = std::string_view(start, static_cast<size_t>(p - start));
  return ScanResult::kOk;
}

// ---------------------------------------------------------------------------------------------
// Numbers

std::optional<int64_t> MicrosToNs(std::string_view t) {
  auto non_finite = [](char c) { return c == 'N' || c == 'I' || c == 'n' || c == 'i'; };
  if (t.empty() || non_finite(t[0]) || (t.size() > 1 && non_finite(t[1]))) return std::nullopt;
  // One pass over the plain form -?digits(.digits)?; anything else (an exponent) goes through
  // from_chars.
  const char* c = t.data();
  const char* e = c + t.size();
  const bool neg = *c == '-';
  c += neg;
  uint64_t whole = 0;
  const char* d = c;
  c = AccumulateDigits(c, e, &whole);
  if (c - d > 16) return std::nullopt;
  uint64_t frac = 0;
  int fd = 0;
  bool round_up = false;
  if (c < e && *c == '.') {
    for (++c; c < e && static_cast<unsigned>(*c - '0') < 10; ++c, ++fd) {
      if (fd < 3)
        frac = frac * 10 + static_cast<uint64_t>(*c - '0');
      else if (fd == 3)
        round_up = *c >= '5';
    }
  }
  if (c == e) {
    for (int k = std::min(fd, 3); k < 3; ++k) frac *= 10;
    auto ns = static_cast<int64_t>(whole * 1000 + frac + (round_up ? 1 : 0));
    return neg ? -ns : ns;
  }
  double v = 0;
  auto r = std::from_chars(t.data(), t.data() + t.size(), v);
  if (r.ec != std::errc() || r.ptr != e || !std::isfinite(v) || std::fabs(v) > 9e15)
    return std::nullopt;
  return static_cast<int64_t>(std::llround(v * 1000.0));
}

std::optional<int64_t> ToIntSlow(std::string_view t) {
  const char* b = t.data();
  const char* e = b + t.size();
  int64_t v = 0;
  auto r = std::from_chars(b, e, v);
  if (r.ec == std::errc() && r.ptr == e) return v;
  uint64_t u = 0;  // ids above INT64_MAX: the same 64 bits
  auto ru = std::from_chars(b, e, u);
  if (ru.ec == std::errc() && ru.ptr == e) return static_cast<int64_t>(u);
  double d = 0;
  auto r2 = std::from_chars(b, e, d);
  if (r2.ec != std::errc() || !std::isfinite(d) || std::fabs(d) > 9e18) return std::nullopt;
  return static_cast<int64_t>(d);
}

double ToDouble(std::string_view t) {
  double d = std::numeric_limits<double>::quiet_NaN();
  std::from_chars(t.data(), t.data() + t.size(), d);
  return d;
}

}  // namespace trainprof::trace::json
