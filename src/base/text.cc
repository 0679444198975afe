#include "base/text.h"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <numeric>

namespace trainprof::base {

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  std::iota(prev.begin(), prev.end(), size_t{0});
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string NearestWord(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = std::max<size_t>(2, word.size() / 3) + 1;
  for (const auto& c : candidates) {
    size_t d = EditDistance(word, c);
    // "training.batch" means "training.batch_size" more likely than "training.epochs".
    const bool prefix = word.size() >= 3 && (std::string_view(c).substr(0, word.size()) == word ||
                                             word.substr(0, c.size()) == c);
    if (prefix) d = std::min<size_t>(d, 1);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

namespace {
std::tm UtcTm(int64_t unix_ns) {
  std::time_t t = static_cast<std::time_t>(unix_ns / 1'000'000'000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  return tm;
}
}  // namespace

std::string UtcIso8601(int64_t unix_ns) {
  std::tm tm = UtcTm(unix_ns);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

std::string UtcCompact(int64_t unix_ns) {
  std::tm tm = UtcTm(unix_ns);
  return fmt::format("{:04}{:02}{:02}T{:02}{:02}{:02}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

bool IsValidUtf8(std::string_view s) {
  const char* p = s.data();
  const char* e = p + s.size();
  while (p < e) {
    const int n = static_cast<unsigned char>(*p) < 0x80 ? 1 : Utf8SequenceLength(p, e);
    if (n <= 0) return false;
    p += n;
  }
  return true;
}

std::string ValidUtf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  const char* p = s.data();
  const char* e = p + s.size();
  while (p < e) {
    const int n = static_cast<unsigned char>(*p) < 0x80 ? 1 : Utf8SequenceLength(p, e);
    if (n <= 0) {
      out += "\xef\xbf\xbd";
      ++p;
    } else {
      out.append(p, static_cast<size_t>(n));
      p += n;
    }
  }
  return out;
}

std::string AsciiLower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

bool ContainsNoCase(std::string_view hay, std::string_view lower_needle) {
  return AsciiLower(hay).find(lower_needle) != std::string::npos;
}

void AppendJsonEscaped(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 15];
        } else {
          out += static_cast<char>(c);
        }
    }
  }
}

std::string Ellipsize(std::string_view s, size_t max) {
  if (s.size() <= max) return std::string(s);
  return std::string(s.substr(0, max - 3)) + "...";
}

std::string EllipsizeMiddle(std::string_view s, size_t max) {
  if (s.size() <= max) return std::string(s);
  const size_t tail = (max - 3) / 3, head = max - 3 - tail;
  return std::string(s.substr(0, head)) + "..." + std::string(s.substr(s.size() - tail));
}

}  // namespace trainprof::base
