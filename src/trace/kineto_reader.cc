// The reader is a hand-written streaming JSON parser specialised for trace events: it keeps a
// window of decoded bytes, parses one "unit" (an event, or one top-level key with its value) at a
// time, and when a unit runs past the window it refills the window and parses that unit again.
// Nothing is committed to the model until a unit parsed whole, so a cut file keeps every complete
// event before the cut.
#include "trace/kineto_reader.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "base/text.h"

namespace trainprof::trace {
namespace {

using Sev = InputDiagnostic::Severity;

// ---------------------------------------------------------------------------------------------
// Byte sources: the raw file (or memory), and a gunzipping wrapper over one.

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Writes up to `max` bytes at `dst`; 0 means the end. Errors name the file.
  virtual StatusOr<size_t> Read(char* dst, size_t max) = 0;
  // Bytes of the underlying file consumed so far (for progress and gzip error positions).
  virtual int64_t raw_bytes_done() const = 0;
};

class MemorySource : public ByteSource {
 public:
  explicit MemorySource(std::string_view s) : s_(s) {}
  StatusOr<size_t> Read(char* dst, size_t max) override {
    size_t n = std::min(max, s_.size() - pos_);
    std::memcpy(dst, s_.data() + pos_, n);
    pos_ += n;
    return n;
  }
  int64_t raw_bytes_done() const override { return static_cast<int64_t>(pos_); }
  // The next bytes without consuming them (gzip detection).
  std::string_view Peek() const { return s_.substr(pos_); }

 private:
  std::string_view s_;
  size_t pos_ = 0;
};

class FileSource : public ByteSource {
 public:
  FileSource(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~FileSource() override { ::close(fd_); }
  StatusOr<size_t> Read(char* dst, size_t max) override {
    for (;;) {
      ssize_t n = ::read(fd_, dst, max);
      if (n >= 0) {
        done_ += n;
        return static_cast<size_t>(n);
      }
      if (errno != EINTR)
        return InvalidArgument(fmt::format("{}: cannot read: {}", path_, std::strerror(errno)));
    }
  }
  int64_t raw_bytes_done() const override { return done_; }

 private:
  int fd_;
  std::string path_;
  int64_t done_ = 0;
};

class GzipSource : public ByteSource {
 public:
  GzipSource(ByteSource* raw, std::string path) : raw_(raw), path_(std::move(path)) {
    in_.resize(size_t{256} << 10);
    zs_ = {};
    ok_ = inflateInit2(&zs_, 15 + 32) == Z_OK;  // 32: accept gzip and zlib headers
  }
  ~GzipSource() override { inflateEnd(&zs_); }
  StatusOr<size_t> Read(char* dst, size_t max) override {
    if (!ok_) return InternalError(fmt::format("{}: zlib could not start", path_));
    zs_.next_out = reinterpret_cast<Bytef*>(dst);
    zs_.avail_out = static_cast<uInt>(std::min<size_t>(max, 1u << 30));
    while (zs_.avail_out > 0 && !done_) {
      if (zs_.avail_in == 0) {
        TRAINPROF_ASSIGN_OR_RETURN(size_t n, raw_->Read(in_.data(), in_.size()));
        if (n == 0) {
          // The compressed stream stops before its end: a file cut while being written.
          truncated_ = true;
          done_ = true;
          break;
        }
        zs_.next_in = reinterpret_cast<Bytef*>(in_.data());
        zs_.avail_in = static_cast<uInt>(n);
      }
      int rc = inflate(&zs_, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        // gzip files may hold several members; go on while input remains.
        if (zs_.avail_in == 0) {
          TRAINPROF_ASSIGN_OR_RETURN(size_t n, raw_->Read(in_.data(), in_.size()));
          if (n == 0) {
            done_ = true;
            break;
          }
          zs_.next_in = reinterpret_cast<Bytef*>(in_.data());
          zs_.avail_in = static_cast<uInt>(n);
        }
        inflateReset(&zs_);
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        return InvalidArgument(
            fmt::format("{}: compressed byte {}: corrupt gzip data ({})", path_,
                        raw_->raw_bytes_done() - static_cast<int64_t>(zs_.avail_in),
                        zs_.msg ? zs_.msg : "inflate failed"));
      }
    }
    return static_cast<size_t>(reinterpret_cast<char*>(zs_.next_out) - dst);
  }
  int64_t raw_bytes_done() const override { return raw_->raw_bytes_done(); }
  bool truncated() const { return truncated_; }

 private:
  ByteSource* raw_;
  std::string path_;
  std::vector<char> in_;
  z_stream zs_;
  bool ok_ = false;
  bool done_ = false;
  bool truncated_ = false;
};

// ---------------------------------------------------------------------------------------------
// Numbers.

// A JSON number as text -> integer nanoseconds from microseconds, exactly for up to three
// decimals, rounded half away from zero beyond. nullopt: NaN, Infinity or out of range.
std::optional<int64_t> MicrosToNs(std::string_view t) {
  if (t.empty() || t[0] == 'N' || t[0] == 'I' || (t.size() > 1 && t[1] == 'I')) return std::nullopt;
  size_t i = 0;
  bool neg = false;
  if (t[i] == '-') {
    neg = true;
    ++i;
  }
  if (t.find_first_of("eE") == std::string_view::npos) {
    uint64_t whole = 0;
    int digits = 0;
    for (; i < t.size() && t[i] >= '0' && t[i] <= '9'; ++i, ++digits) {
      whole = whole * 10 + static_cast<uint64_t>(t[i] - '0');
      if (digits > 15) return std::nullopt;
    }
    uint64_t frac = 0;
    int fd = 0;
    bool round_up = false;
    if (i < t.size() && t[i] == '.') {
      for (++i; i < t.size(); ++i, ++fd) {
        if (fd < 3)
          frac = frac * 10 + static_cast<uint64_t>(t[i] - '0');
        else if (fd == 3)
          round_up = t[i] >= '5';
      }
    }
    for (int k = std::min(fd, 3); k < 3; ++k) frac *= 10;
    auto ns = static_cast<int64_t>(whole * 1000 + frac + (round_up ? 1 : 0));
    return neg ? -ns : ns;
  }
  double v = 0;
  auto r = std::from_chars(t.data(), t.data() + t.size(), v);
  if (r.ec != std::errc() || !std::isfinite(v) || std::fabs(v) > 9e15) return std::nullopt;
  return static_cast<int64_t>(std::llround(v * 1000.0));
}

std::optional<int64_t> ToInt(std::string_view t) {
  int64_t v = 0;
  auto r = std::from_chars(t.data(), t.data() + t.size(), v);
  if (r.ec == std::errc() && r.ptr == t.data() + t.size()) return v;
  double d = 0;
  auto r2 = std::from_chars(t.data(), t.data() + t.size(), d);
  if (r2.ec != std::errc() || !std::isfinite(d) || std::fabs(d) > 9e18) return std::nullopt;
  return static_cast<int64_t>(d);
}

double ToDouble(std::string_view t) {
  double d = std::numeric_limits<double>::quiet_NaN();
  std::from_chars(t.data(), t.data() + t.size(), d);
  return d;
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
      return '"';
    case '\\':
      return '\\';
    case '/':
      return '/';
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

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// ---------------------------------------------------------------------------------------------
// Scanning helpers.

int64_t CountNewlines(const char* b, const char* e) {
  int64_t n = 0;
  while (b < e) {
    const void* q = std::memchr(b, '\n', static_cast<size_t>(e - b));
    if (q == nullptr) break;
    ++n;
    b = static_cast<const char*>(q) + 1;
  }
  return n;
}

// First byte in [p, e) that ends a string's fast path: '"', '\\' or a control character,
// eight bytes at a time (the classic "has a zero byte" bit trick).
const char* FindStringSpecial(const char* p, const char* e) {
  constexpr uint64_t kOnes = 0x0101010101010101ULL, kHigh = 0x8080808080808080ULL;
  auto has_zero = [](uint64_t v) { return (v - kOnes) & ~v & kHigh; };
  while (e - p >= 8) {
    uint64_t x;
    std::memcpy(&x, p, 8);
    uint64_t m = has_zero(x ^ (kOnes * '"')) | has_zero(x ^ (kOnes * '\\')) |
                 ((x - kOnes * 0x20) & ~x & kHigh);
    if (m != 0) break;
    p += 8;
  }
  while (p < e && *p != '"' && *p != '\\' && static_cast<unsigned char>(*p) >= 0x20) ++p;
  return p;
}

// ---------------------------------------------------------------------------------------------
// The parser.

enum class R { kOk, kMore, kErr };

#define TP_TRY(expr)             \
  do {                           \
    R r_ = (expr);               \
    if (r_ != R::kOk) return r_; \
  } while (false)

// A JSON scalar or string as parsed: its text (numbers, literals) or its decoded value (strings).
struct Scalar {
  enum Type { kNone, kString, kNumber, kOtherValue } type = kNone;
  std::string_view text;
};

// One event as parsed, before it is committed to the model. Views point into the window or into
// the scratch strings, which live until the next event.
struct RawEvent {
  Scalar ph, cat, name, pid, tid, ts, dur, id;
  Scalar correlation, external_id, device, stream, blocks_per_sm, occupancy;
  Scalar total_allocated, device_id, bytes;  // [memory] instant events
  bool has_args = false;
};

class Parser {
 public:
  Parser(ByteSource* src, std::string name, const ReadOptions& opt)
      : src_(src), name_(std::move(name)), opt_(opt) {
    buf_.resize(std::max<size_t>(opt.chunk_bytes, 4096));
  }

  StatusOr<TraceModel> Run();
  void set_gzip(GzipSource* g) { gzip_ = g; }

 private:
  enum class State { kStart, kTopKey, kTopKeyFirst, kEventsFirst, kEvent, kAfterEvents, kEnd };

  Status Refill();
  R Step();
  R StepTopKey(const char*& p, const char* e, bool first);
  R StepEvent(const char*& p, const char* e);

  R Ws(const char*& p, const char* e) {
    while (p < e && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) ++p;
    return p < e ? R::kOk : R::kMore;
  }
  R Expect(const char*& p, const char* e, char c, const char* what) {
    TP_TRY(Ws(p, e));
    if (*p != c) return Fail(p, fmt::format("expected {}", what));
    ++p;
    return R::kOk;
  }
  R Fail(const char* at, std::string what) {
    err_at_ = at;
    err_ = std::move(what);
    return R::kErr;
  }
  R String(const char*& p, const char* e, std::string_view* out, std::string* scratch);
  R NumberOrLiteral(const char*& p, const char* e, Scalar* out);
  R Value(const char*& p, const char* e, Scalar* out, std::string* scratch, int depth);
  R Args(const char*& p, const char* e, RawEvent* ev);

  void Commit(const RawEvent& ev);
  void ReadTopValue(std::string_view key, std::string_view text);
  Status Error(const char* at, const std::string& what) const;
  std::string Where(int64_t offset) const;
  void Count(const std::string& diag, std::string example);
  StatusOr<TraceModel> Finish();

  ByteSource* src_;
  GzipSource* gzip_ = nullptr;
  std::string name_;
  ReadOptions opt_;

  std::vector<char> buf_;
  size_t pos_ = 0, end_ = 0;
  bool eof_ = false;
  int64_t base_offset_ = 0;  // decoded offset of buf_[0]
  int64_t lines_ = 0;        // newlines before buf_[0]
  int64_t col_base_ = 0;     // bytes since the last newline, at buf_[0]

  State state_ = State::kStart;
  bool bare_array_ = false;
  bool saw_events_ = false;
  int64_t events_seen_ = 0;
  const char* err_at_ = nullptr;
  std::string err_;

  std::string s_key_, s_ph_, s_cat_, s_name_, s_pid_, s_tid_, s_id_, s_tmp_;
  TraceModel m_;
  std::string distributed_info_, device_properties_;
  std::vector<std::string> top_keys_;
  // Per-event diagnostics: count and one example, by diagnostic name.
  std::map<std::string, std::pair<int64_t, std::string>> counts_;
  std::vector<int64_t> flow_starts_, flow_ends_;
  struct MemoryDelta {
    int64_t device, ts_ns, bytes;
  };
  std::vector<MemoryDelta> memory_deltas_;  // [memory] events with Bytes but no Total Allocated
  void PeaksFromDeltas();
};

Status Parser::Refill() {
  if (pos_ > 0) {
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
  if (end_ == buf_.size()) buf_.resize(buf_.size() * 2);  // one unit larger than the window
  while (end_ < buf_.size() && !eof_) {
    TRAINPROF_ASSIGN_OR_RETURN(size_t n, src_->Read(buf_.data() + end_, buf_.size() - end_));
    if (n == 0) eof_ = true;
    end_ += n;
  }
  if (opt_.progress) opt_.progress(src_->raw_bytes_done());
  return Status::Ok();
}

std::string Parser::Where(int64_t offset) const {
  // Line and column of a decoded offset inside the current window.
  int64_t rel = offset - base_offset_;
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

Status Parser::Error(const char* at, const std::string& what) const {
  int64_t off = base_offset_ + (at - buf_.data());
  return InvalidArgument(fmt::format("{}: {}: {}", name_, Where(off), what));
}

void Parser::Count(const std::string& diag, std::string example) {
  auto& c = counts_[diag];
  if (c.first++ == 0) c.second = std::move(example);
}

R Parser::String(const char*& p, const char* e, std::string_view* out, std::string* scratch) {
  // p is at the opening quote.
  const char* s = p + 1;
  const char* q = FindStringSpecial(s, e);
  if (q == e) return R::kMore;
  if (*q == '"') {
    *out = std::string_view(s, static_cast<size_t>(q - s));
    p = q + 1;
    return R::kOk;
  }
  if (*q != '\\') return Fail(q, "control character in a string");
  const char* bs = q;
  scratch->assign(s, bs);
  const char* c = bs;
  for (;;) {
    if (c >= e) return R::kMore;
    char ch = *c;
    if (ch == '"') break;
    if (static_cast<unsigned char>(ch) < 0x20) return Fail(c, "control character in a string");
    if (ch != '\\') {
      scratch->push_back(ch);
      ++c;
      continue;
    }
    if (c + 1 >= e) return R::kMore;
    char esc = c[1];
    c += 2;
    if (char plain = SimpleEscape(esc)) {
      scratch->push_back(plain);
      continue;
    }
    switch (esc) {
      case 'u': {
        auto hex4 = [&](const char* h, uint32_t* v) -> R {
          if (e - h < 4) return R::kMore;
          *v = 0;
          for (int k = 0; k < 4; ++k) {
            int d = HexDigit(h[k]);
            if (d < 0) return Fail(h + k, "bad \\u escape in a string");
            *v = *v * 16 + static_cast<uint32_t>(d);
          }
          return R::kOk;
        };
        uint32_t cp = 0;
        TP_TRY(hex4(c, &cp));
        c += 4;
        if (cp >= 0xD800 && cp < 0xDC00) {  // a surrogate pair's first half
          if (e - c < 6) return R::kMore;
          uint32_t lo = 0;
          if (c[0] == '\\' && c[1] == 'u' && hex4(c + 2, &lo) == R::kOk && lo >= 0xDC00 &&
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
        break;
      }
      default:
        return Fail(c - 1, "bad escape in a string");
    }
  }
  *out = *scratch;
  p = c + 1;
  return R::kOk;
}

R Parser::NumberOrLiteral(const char*& p, const char* e, Scalar* out) {
  const char* s = p;
  auto lit = [&](std::string_view word, Scalar::Type t) -> R {
    if (static_cast<size_t>(e - s) < word.size())
      return std::string_view(s, static_cast<size_t>(e - s)) == word.substr(0, e - s)
                 ? R::kMore
                 : Fail(s, "not JSON: unexpected character");
    if (std::string_view(s, word.size()) != word) return Fail(s, "not JSON: unexpected character");
    p = s + word.size();
    out->type = t;
    out->text = std::string_view(s, word.size());
    return R::kOk;
  };
  switch (*s) {
    case 't':
      return lit("true", Scalar::kOtherValue);
    case 'f':
      return lit("false", Scalar::kOtherValue);
    case 'n':
      return lit("null", Scalar::kOtherValue);
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
    if (c < e && *c == 'I') {
      constexpr std::string_view kNegInf = "-Infinity";
      size_t have = std::min(kNegInf.size(), static_cast<size_t>(e - s));
      if (std::string_view(s, have) != kNegInf.substr(0, have))
        return Fail(s, "not JSON: unexpected character");
      if (have < kNegInf.size()) return R::kMore;
      p = s + kNegInf.size();
      out->type = Scalar::kNumber;
      out->text = kNegInf;
      return R::kOk;
    }
  }
  // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
  auto digits = [&]() -> int {
    int n = 0;
    while (c < e && *c >= '0' && *c <= '9') ++c, ++n;
    return n;
  };
  if (c >= e) return R::kMore;
  if (*c < '0' || *c > '9') return Fail(s, "not JSON: unexpected character");
  bool leading_zero = *c == '0';
  int n = digits();
  if (leading_zero && n > 1) return Fail(s, "not JSON: number with a leading zero");
  if (c < e && *c == '.') {
    ++c;
    if (digits() == 0) return c >= e ? R::kMore : Fail(c, "not JSON: digits expected");
  }
  if (c < e && (*c == 'e' || *c == 'E')) {
    ++c;
    if (c < e && (*c == '+' || *c == '-')) ++c;
    if (digits() == 0) return c >= e ? R::kMore : Fail(c, "not JSON: exponent digits expected");
  }
  if (c >= e) return R::kMore;  // the number may go on in the next chunk
  out->type = Scalar::kNumber;
  out->text = std::string_view(s, static_cast<size_t>(c - s));
  p = c;
  return R::kOk;
}

R Parser::Value(const char*& p, const char* e, Scalar* out, std::string* scratch, int depth) {
  TP_TRY(Ws(p, e));
  const char* start = p;
  if (*p == '"') {
    TP_TRY(String(p, e, &out->text, scratch));
    out->type = Scalar::kString;
    return R::kOk;
  }
  if (*p == '{' || *p == '[') {
    if (depth > 64) return Fail(p, "nested too deeply (over 64 levels)");
    char close = *p == '{' ? '}' : ']';
    bool object = *p == '{';
    ++p;
    TP_TRY(Ws(p, e));
    if (*p == close) {
      ++p;
    } else {
      for (;;) {
        Scalar tmp;
        std::string_view key;
        if (object) {
          TP_TRY(Ws(p, e));
          if (*p != '"') return Fail(p, "expected a key string");
          TP_TRY(String(p, e, &key, &s_tmp_));
          TP_TRY(Expect(p, e, ':', "':' after a key"));
        }
        TP_TRY(Value(p, e, &tmp, &s_tmp_, depth + 1));
        TP_TRY(Ws(p, e));
        if (*p == ',') {
          ++p;
          continue;
        }
        if (*p == close) {
          ++p;
          break;
        }
        return Fail(p, object ? "expected ',' or '}'" : "expected ',' or ']'");
      }
    }
    out->type = Scalar::kOtherValue;
    out->text = std::string_view(start, static_cast<size_t>(p - start));
    return R::kOk;
  }
  return NumberOrLiteral(p, e, out);
}

R Parser::Args(const char*& p, const char* e, RawEvent* ev) {
  // p at '{'.
  ++p;
  TP_TRY(Ws(p, e));
  if (*p == '}') {
    ++p;
    return R::kOk;
  }
  for (;;) {
    TP_TRY(Ws(p, e));
    if (*p != '"') return Fail(p, "expected a key string");
    std::string_view key;
    TP_TRY(String(p, e, &key, &s_key_));
    TP_TRY(Expect(p, e, ':', "':' after a key"));
    Scalar* target = nullptr;
    switch (key.size()) {  // by length first: most args are none of these
      case 5:
        if (key == "Bytes") target = &ev->bytes;
        break;
      case 6:
        if (key == "stream")
          target = &ev->stream;
        else if (key == "device")
          target = &ev->device;
        break;
      case 9:
        if (key == "Device Id") target = &ev->device_id;
        break;
      case 11:
        if (key == "correlation")
          target = &ev->correlation;
        else if (key == "External id")
          target = &ev->external_id;
        break;
      case 13:
        if (key == "blocks per SM") target = &ev->blocks_per_sm;
        break;
      case 15:
        if (key == "Total Allocated") target = &ev->total_allocated;
        break;
      case 25:
        if (key == "est. achieved occupancy %") target = &ev->occupancy;
        break;
      default:
        break;
    }
    Scalar v;
    TP_TRY(Value(p, e, target ? target : &v, &s_tmp_, 2));
    TP_TRY(Ws(p, e));
    if (*p == ',') {
      ++p;
      continue;
    }
    if (*p == '}') {
      ++p;
      return R::kOk;
    }
    return Fail(p, "expected ',' or '}'");
  }
}

R Parser::StepEvent(const char*& p, const char* e) {
  TP_TRY(Ws(p, e));
  if (*p != '{') return Fail(p, "expected an event object in traceEvents");
  ++p;
  RawEvent ev;
  TP_TRY(Ws(p, e));
  if (*p == '}') {
    ++p;
  } else {
    for (;;) {
      TP_TRY(Ws(p, e));
      if (*p != '"') return Fail(p, "expected a key string");
      std::string_view key;
      TP_TRY(String(p, e, &key, &s_key_));
      TP_TRY(Expect(p, e, ':', "':' after a key"));
      TP_TRY(Ws(p, e));
      Scalar* target = nullptr;
      std::string* scratch = &s_tmp_;
      if (key.size() == 2) {
        if (key == "ph")
          target = &ev.ph, scratch = &s_ph_;
        else if (key == "ts")
          target = &ev.ts;
        else if (key == "id")
          target = &ev.id, scratch = &s_id_;
      } else if (key == "name") {
        target = &ev.name, scratch = &s_name_;
      } else if (key == "cat") {
        target = &ev.cat, scratch = &s_cat_;
      } else if (key == "pid") {
        target = &ev.pid, scratch = &s_pid_;
      } else if (key == "tid") {
        target = &ev.tid, scratch = &s_tid_;
      } else if (key == "dur") {
        target = &ev.dur;
      } else if (key == "args" && *p == '{') {
        ev.has_args = true;
        TP_TRY(Args(p, e, &ev));
      }
      if (!ev.has_args || key != "args") {
        Scalar v;
        TP_TRY(Value(p, e, target ? target : &v, scratch, 1));
      }
      TP_TRY(Ws(p, e));
      if (*p == ',') {
        ++p;
        continue;
      }
      if (*p == '}') {
        ++p;
        break;
      }
      return Fail(p, "expected ',' or '}' in an event");
    }
  }
  // The separator after the event belongs to this unit.
  TP_TRY(Ws(p, e));
  if (*p == ',') {
    ++p;
  } else if (*p == ']') {
    ++p;
    state_ = State::kAfterEvents;
  } else {
    return Fail(p, "expected ',' or ']' after an event");
  }
  Commit(ev);
  return R::kOk;
}

EventKind KindOf(std::string_view cat, bool* known) {
  *known = true;
  // Today's Kineto names, then the pre-2021 ones, then AMD's.
  if (cat == "cpu_op" || cat == "Operator") return EventKind::kCpuOp;
  if (cat == "kernel" || cat == "Kernel") return EventKind::kKernel;
  if (cat == "cuda_runtime" || cat == "Runtime" || cat == "hip_runtime") return EventKind::kRuntime;
  if (cat == "cuda_driver" || cat == "hip_driver") return EventKind::kDriver;
  if (cat == "user_annotation") return EventKind::kUserAnnotation;
  if (cat == "gpu_memcpy" || cat == "Memcpy") return EventKind::kMemcpy;
  if (cat == "gpu_memset" || cat == "Memset") return EventKind::kMemset;
  if (cat == "python_function") return EventKind::kPythonFunction;
  if (cat == "gpu_user_annotation") return EventKind::kGpuUserAnnotation;
  if (cat == "Trace") return EventKind::kSpan;
  if (cat == "trainprof") return EventKind::kCpuOp;  // trainprof's own scopes
  // Known categories no analysis uses.
  *known = cat == "overhead" || cat == "cpu_instant_event" || cat == "python" ||
           cat == "cuda_profiler_range" || cat == "mtia_runtime" || cat == "mtia_ccp_events" ||
           cat == "privateuse1_runtime" || cat == "privateuse1_driver";
  return EventKind::kOther;
}

void Parser::Commit(const RawEvent& ev) {
  ++events_seen_;
  if (ev.ph.type != Scalar::kString) {
    Count("missing_fields", "an event without \"ph\"");
    return;
  }
  std::string_view ph = ev.ph.text;
  bool flow = ph == "s" || ph == "f" || ph == "t";
  if (flow) {
    if (ev.cat.text == "ac2g" || ev.cat.text == "async_cpu_to_gpu") {
      std::optional<int64_t> id;
      if (ev.id.type == Scalar::kNumber || ev.id.type == Scalar::kString) id = ToInt(ev.id.text);
      if (!id) {
        Count("missing_fields", "a flow event without a numeric \"id\"");
        return;
      }
      (ph == "s" ? flow_starts_ : flow_ends_).push_back(*id);
    }
    return;
  }
  if ((ph == "i" || ph == "I") && ev.name.text == "[memory]" &&
      ev.total_allocated.type != Scalar::kNumber && ev.bytes.type == Scalar::kNumber &&
      ev.ts.type == Scalar::kNumber) {
    // Older traces: only the change of each allocation or free; the curve is rebuilt at the end.
    int64_t dev = ev.device_id.type == Scalar::kNumber ? ToInt(ev.device_id.text).value_or(-1) : -1;
    auto ts = MicrosToNs(ev.ts.text);
    auto bytes = ToInt(ev.bytes.text);
    if (ts && bytes) memory_deltas_.push_back({dev, *ts, *bytes});
    return;
  }
  if ((ph == "i" || ph == "I") && ev.name.text == "[memory]" &&
      ev.total_allocated.type == Scalar::kNumber) {
    int64_t dev = ev.device_id.type == Scalar::kNumber ? ToInt(ev.device_id.text).value_or(-1) : -1;
    int64_t bytes = ToInt(ev.total_allocated.text).value_or(0);
    auto& peaks = m_.peak_allocated_bytes;
    auto it =
        std::find_if(peaks.begin(), peaks.end(), [&](const auto& p) { return p.first == dev; });
    if (it == peaks.end())
      peaks.emplace_back(dev, bytes);
    else
      it->second = std::max(it->second, bytes);
    return;
  }
  if (ph != "X") return;  // metadata, counters, other instants: not analysed
  if (ev.ts.type != Scalar::kNumber || ev.dur.type != Scalar::kNumber ||
      ev.name.type != Scalar::kString) {
    Count("missing_fields", fmt::format("\"{}\" lacks {}", base::Ellipsize(ev.name.text, 60),
                                        ev.name.type != Scalar::kString ? "a name"
                                        : ev.ts.type != Scalar::kNumber ? "a numeric ts"
                                                                        : "a numeric dur"));
    return;
  }
  std::optional<int64_t> ts = MicrosToNs(ev.ts.text);
  std::optional<int64_t> dur = MicrosToNs(ev.dur.text);
  if (!ts || !dur || *dur < 0) {
    Count("bad_time", fmt::format("\"{}\" has ts {} and dur {}", base::Ellipsize(ev.name.text, 60),
                                  ev.ts.text, ev.dur.text));
    return;
  }
  bool known = true;
  EventKind k = EventKind::kOther;
  if (ev.cat.type == Scalar::kString) {
    k = KindOf(ev.cat.text, &known);
    if (!known)
      Count("unknown_category:" + std::string(ev.cat.text), base::Ellipsize(ev.name.text, 60));
  } else {
    Count("unknown_category:", base::Ellipsize(ev.name.text, 60));
  }
  auto id_of = [&](const Scalar& s) -> int64_t {
    if (s.type == Scalar::kNumber) return ToInt(s.text).value_or(0);
    if (s.type == Scalar::kString) return TraceModel::kStringIdBase + m_.names.Intern(s.text);
    return 0;
  };
  size_t i = m_.Add(k, ev.name.text, *ts, *dur, id_of(ev.pid), id_of(ev.tid));
  auto opt_int = [](const Scalar& s) -> int64_t {
    if (s.type != Scalar::kNumber) return kNone;
    return ToInt(s.text).value_or(kNone);
  };
  if (ev.has_args) {
    m_.correlation[i] = opt_int(ev.correlation);
    m_.external_id[i] = opt_int(ev.external_id);
    if (ev.stream.type != Scalar::kNone || ev.device.type != Scalar::kNone) {
      // GPU events, and the odd CPU-side event with a stream (cuda_sync's "Stream Sync").
      int64_t d = opt_int(ev.device), s = opt_int(ev.stream);
      m_.device[i] = d >= INT32_MIN && d <= INT32_MAX ? static_cast<int32_t>(d) : -1;
      m_.stream[i] = s;
      if (ev.blocks_per_sm.type == Scalar::kNumber)
        m_.blocks_per_sm[i] = static_cast<float>(ToDouble(ev.blocks_per_sm.text));
      if (ev.occupancy.type == Scalar::kNumber)
        m_.occupancy_pct[i] = static_cast<float>(ToDouble(ev.occupancy.text));
    }
  }
  if (IsGpuKind(k) && m_.stream[i] < 0) {
    // Kineto puts the stream in args; old traces only in tid ("stream 7").
    int64_t t = m_.tid[i];
    if (t >= TraceModel::kStringIdBase) {
      const std::string& tn = m_.names[static_cast<uint32_t>(t - TraceModel::kStringIdBase)];
      size_t pos = tn.find_first_of("0123456789");
      if (pos != std::string::npos) t = ToInt(std::string_view(tn).substr(pos)).value_or(-1);
    }
    m_.stream[i] = t >= 0 ? t : -1;
  }
}

R Parser::StepTopKey(const char*& p, const char* e, bool first) {
  TP_TRY(Ws(p, e));
  if (first && *p == '}') {
    ++p;
    state_ = State::kEnd;
    return R::kOk;
  }
  if (*p != '"') return Fail(p, "expected a key string");
  std::string_view key;
  TP_TRY(String(p, e, &key, &s_key_));
  TP_TRY(Expect(p, e, ':', "':' after a key"));
  TP_TRY(Ws(p, e));
  if (key == "traceEvents") {
    if (*p != '[') return Fail(p, "\"traceEvents\" is not an array");
    ++p;
    saw_events_ = true;
    state_ = State::kEventsFirst;
    return R::kOk;
  }
  Scalar v;
  TP_TRY(Value(p, e, &v, &s_tmp_, 1));
  TP_TRY(Ws(p, e));
  if (*p != ',' && *p != '}') return Fail(p, "expected ',' or '}'");
  bool last = *p == '}';
  ++p;
  top_keys_.emplace_back(key);
  if (key == "distributedInfo") distributed_info_.assign(v.text);
  if (key == "deviceProperties") device_properties_.assign(v.text);
  state_ = last ? State::kEnd : State::kTopKey;
  return R::kOk;
}

R Parser::Step() {
  const char* p = buf_.data() + pos_;
  const char* e = buf_.data() + end_;
  R r = R::kOk;
  switch (state_) {
    case State::kStart:
      r = Ws(p, e);
      if (r != R::kOk) break;
      if (*p == '{') {
        state_ = State::kTopKeyFirst;
      } else if (*p == '[') {
        bare_array_ = true;
        saw_events_ = true;
        state_ = State::kEventsFirst;
      } else {
        r = Fail(p, "not JSON: a trace starts with '{' or '['");
        break;
      }
      ++p;
      break;
    case State::kTopKeyFirst:
    case State::kTopKey:
      r = StepTopKey(p, e, state_ == State::kTopKeyFirst);
      break;
    case State::kEventsFirst:
      r = Ws(p, e);
      if (r != R::kOk) break;
      if (*p == ']') {
        ++p;
        state_ = State::kAfterEvents;
        break;
      }
      state_ = State::kEvent;
      [[fallthrough]];
    case State::kEvent:
      r = StepEvent(p, e);
      break;
    case State::kAfterEvents:
      if (bare_array_) {
        state_ = State::kEnd;
        break;
      }
      r = Ws(p, e);
      if (r != R::kOk) break;
      if (*p == ',')
        state_ = State::kTopKey;
      else if (*p == '}')
        state_ = State::kEnd;
      else
        r = Fail(p, "expected ',' or '}' after traceEvents");
      if (r == R::kOk) ++p;
      break;
    case State::kEnd:
      r = Ws(p, e);
      if (r == R::kOk) r = Fail(p, "unexpected data after the end of the JSON document");
      break;
  }
  if (r == R::kOk) pos_ = static_cast<size_t>(p - buf_.data());
  return r;
}

StatusOr<TraceModel> Parser::Run() {
  m_.path = name_;
  TRAINPROF_RETURN_IF_ERROR(Refill());
  if (end_ == 0)
    return InvalidArgument(fmt::format("{}: byte 0 (line 1, column 1): the file is empty", name_));
  for (;;) {
    R r = Step();
    if (r == R::kErr) return Error(err_at_ ? err_at_ : buf_.data() + pos_, err_);
    if (r == R::kOk) {
      continue;
    }
    // kMore: the unit runs past the window.
    if (!eof_) {
      TRAINPROF_RETURN_IF_ERROR(Refill());
      continue;
    }
    // The end of the data.
    if (state_ == State::kEnd) break;
    if (state_ == State::kStart)
      return InvalidArgument(fmt::format("{}: {}: the file holds only white space", name_,
                                         Where(base_offset_ + static_cast<int64_t>(end_))));
    bool cut_in_events = state_ == State::kEvent || state_ == State::kEventsFirst;
    bool gz_cut = gzip_ != nullptr && gzip_->truncated();
    std::string where = Where(base_offset_ + static_cast<int64_t>(pos_));
    std::string why = gz_cut ? "the compressed stream is cut short" : "the JSON is cut short";
    if (!saw_events_ || (cut_in_events && events_seen_ == 0))
      return InvalidArgument(
          fmt::format("{}: {}: {} before the first event (truncated file)", name_, where, why));
    m_.truncated = cut_in_events;
    m_.AddDiagnostic(
        Sev::kWarning, "truncated", 1,
        fmt::format("{}: {} at {}: kept the {} events before the cut{}", name_, why, where,
                    events_seen_, cut_in_events ? "" : " (the metadata after the events is lost)"));
    break;
  }
  if (!saw_events_)
    return InvalidArgument(
        fmt::format("{}: {}: not a trace: valid JSON but no \"traceEvents\" array", name_,
                    Where(base_offset_ + static_cast<int64_t>(end_))));
  m_.json_bytes = base_offset_ + static_cast<int64_t>(end_);
  return Finish();
}

void Parser::ReadTopValue(std::string_view key, std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    m_.AddDiagnostic(Sev::kWarning, "bad_metadata", 1,
                     fmt::format("{}: \"{}\" could not be read", name_, key));
    return;
  }
  auto get_int = [](const nlohmann::json& o, const char* k) -> std::optional<int64_t> {
    auto it = o.find(k);
    if (it == o.end() || !it->is_number()) return std::nullopt;
    return it->get<int64_t>();
  };
  if (key == "distributedInfo" && j.is_object()) {
    if (auto r = get_int(j, "rank")) {
      m_.rank = *r;
      m_.rank_source = "distributedInfo";
    }
    m_.world_size = get_int(j, "world_size").value_or(0);
    if (j.contains("backend") && j["backend"].is_string()) m_.backend = j["backend"];
  } else if (key == "deviceProperties" && j.is_array()) {
    for (const auto& d : j) {
      if (!d.is_object()) continue;
      DeviceInfo info;
      info.id = get_int(d, "id").value_or(-1);
      if (d.contains("name") && d["name"].is_string()) info.name = d["name"];
      info.total_memory_bytes = get_int(d, "totalGlobalMem").value_or(0);
      info.compute_major = get_int(d, "computeMajor").value_or(0);
      info.compute_minor = get_int(d, "computeMinor").value_or(0);
      info.num_sms = get_int(d, "numSms").value_or(0);
      info.max_threads_per_sm = get_int(d, "maxThreadsPerMultiprocessor").value_or(0);
      m_.devices.push_back(std::move(info));
    }
  }
}

StatusOr<TraceModel> Parser::Finish() {
  if (!distributed_info_.empty()) ReadTopValue("distributedInfo", distributed_info_);
  if (!device_properties_.empty()) ReadTopValue("deviceProperties", device_properties_);
  if (m_.rank_source.empty()) {
    size_t slash = name_.find_last_of('/');
    int64_t r = RankFromFileName(slash == std::string::npos ? name_ : name_.substr(slash + 1));
    if (r >= 0) {
      m_.rank = r;
      m_.rank_source = "file name";
    } else {
      m_.rank = 0;
      m_.rank_source = "default";
      m_.AddDiagnostic(Sev::kWarning, "rank_unknown", 1,
                       fmt::format("{}: no rank in distributedInfo or the file name; taken as "
                                   "rank 0",
                                   name_));
    }
  }
  for (auto& [diag, c] : counts_) {
    std::string msg;
    if (diag == "missing_fields")
      msg = fmt::format("{}: {} events lack required fields and were skipped (e.g. {})", name_,
                        c.first, c.second);
    else if (diag == "bad_time")
      msg = fmt::format(
          "{}: {} events have a negative, NaN or infinite time and were skipped "
          "(e.g. {})",
          name_, c.first, c.second);
    else
      msg = fmt::format("{}: {} events of unknown category \"{}\" kept as \"other\" (e.g. {})",
                        name_, c.first, diag.substr(diag.find(':') + 1), c.second);
    std::string stable = diag.rfind("unknown_category", 0) == 0 ? "unknown_category" : diag;
    m_.AddDiagnostic(Sev::kWarning, stable, c.first, std::move(msg));
  }
  // Flows pair a runtime call ("s") with the GPU work it launched ("f") by id.
  std::sort(flow_starts_.begin(), flow_starts_.end());
  std::sort(flow_ends_.begin(), flow_ends_.end());
  std::vector<int64_t> odd, unpaired;
  std::set_symmetric_difference(flow_starts_.begin(), flow_starts_.end(), flow_ends_.begin(),
                                flow_ends_.end(), std::back_inserter(odd));
  // Older Kineto writes one flow end per runtime call, with no start: that is fine as long as an
  // event carries the same correlation id.
  std::vector<int64_t> corr;
  for (int64_t c : m_.correlation)
    if (c != kNone) corr.push_back(c);
  std::sort(corr.begin(), corr.end());
  std::set_difference(odd.begin(), odd.end(), corr.begin(), corr.end(),
                      std::back_inserter(unpaired));
  if (!unpaired.empty())
    m_.AddDiagnostic(Sev::kInfo, "unpaired_flows", static_cast<int64_t>(unpaired.size()),
                     fmt::format("{}: {} CPU-to-GPU flow events have no partner and match no "
                                 "event's correlation id (e.g. id {}); they are ignored",
                                 name_, unpaired.size(), unpaired.front()));
  PeaksFromDeltas();
  m_.LinkLaunches();
  return std::move(m_);
}

// Devices whose [memory] events carry only Bytes deltas: the allocated curve is their running
// sum in time order, from 0 at the trace's start, and its peak is the device's peak. Devices
// with Total Allocated keep that.
void Parser::PeaksFromDeltas() {
  std::stable_sort(memory_deltas_.begin(), memory_deltas_.end(),
                   [](const MemoryDelta& a, const MemoryDelta& b) { return a.ts_ns < b.ts_ns; });
  std::map<int64_t, std::pair<int64_t, int64_t>> curve;  // device -> (now, peak)
  for (const MemoryDelta& d : memory_deltas_) {
    auto& [now, peak] = curve[d.device];
    now += d.bytes;
    peak = std::max(peak, now);
  }
  auto& peaks = m_.peak_allocated_bytes;
  for (const auto& entry : curve) {
    const int64_t dev = entry.first;
    if (std::any_of(peaks.begin(), peaks.end(), [dev](const auto& p) { return p.first == dev; }))
      continue;
    peaks.emplace_back(dev, entry.second.second);
    m_.AddDiagnostic(
        Sev::kInfo, "memory_from_deltas", 1,
        fmt::format("{}: the {} memory peak was rebuilt from the [memory] events' Bytes changes "
                    "(the trace has no Total Allocated): it counts from the trace's start, so "
                    "memory allocated before profiling began is not in it",
                    name_, dev < 0 ? std::string("CPU") : fmt::format("GPU {}", dev)));
  }
}

StatusOr<TraceModel> ParseFrom(ByteSource* raw, std::string_view head, const std::string& name,
                               const ReadOptions& opt) {
  bool gz = head.size() >= 2 && static_cast<unsigned char>(head[0]) == 0x1f &&
            static_cast<unsigned char>(head[1]) == 0x8b;
  if (!gz) return Parser(raw, name, opt).Run();
  GzipSource g(raw, name);
  Parser p(&g, name, opt);
  p.set_gzip(&g);
  return p.Run();
}

// A source that first replays bytes already read (the magic bytes), then the rest of the file.
class PrefixedSource : public ByteSource {
 public:
  PrefixedSource(std::string prefix, ByteSource* rest) : prefix_(std::move(prefix)), rest_(rest) {}
  StatusOr<size_t> Read(char* dst, size_t max) override {
    if (pos_ < prefix_.size()) {
      size_t n = std::min(max, prefix_.size() - pos_);
      std::memcpy(dst, prefix_.data() + pos_, n);
      pos_ += n;
      return n;
    }
    return rest_->Read(dst, max);
  }
  int64_t raw_bytes_done() const override { return rest_->raw_bytes_done(); }

 private:
  std::string prefix_;
  size_t pos_ = 0;
  ByteSource* rest_;
};

}  // namespace

StatusOr<TraceModel> ReadTraceFile(const std::string& path, const ReadOptions& options) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NotFound(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  FileSource file(fd, path);
  char head[2] = {0, 0};
  size_t got = 0;
  while (got < 2) {
    TRAINPROF_ASSIGN_OR_RETURN(size_t n, file.Read(head + got, 2 - got));
    if (n == 0) break;
    got += n;
  }
  PrefixedSource src(std::string(head, got), &file);
  return ParseFrom(&src, std::string_view(head, got), path, options);
}

StatusOr<TraceModel> ParseTrace(std::string_view json, const std::string& name) {
  MemorySource src(json);
  ReadOptions o;
  o.chunk_bytes = std::min(o.chunk_bytes, json.size() + 1);  // small inputs, small window
  return ParseFrom(&src, src.Peek(), name, o);
}

int64_t RankFromFileName(std::string_view file_name) {
  for (size_t at = file_name.find("rank"); at != std::string_view::npos;
       at = file_name.find("rank", at + 1)) {
    size_t i = at + 4;
    if (i < file_name.size() && (file_name[i] == '-' || file_name[i] == '_')) ++i;
    size_t j = i;
    while (j < file_name.size() && j - i < 9 && file_name[j] >= '0' && file_name[j] <= '9') ++j;
    if (j > i) return ToInt(file_name.substr(i, j - i)).value_or(-1);
  }
  return -1;
}

}  // namespace trainprof::trace
