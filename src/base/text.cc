#include "base/text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
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

namespace {

size_t CommonPrefix(std::string_view a, std::string_view b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  return i;
}

// For each name, the longest start it shares with any other: that other is its neighbour in
// sorted order. `reversed` does the same for ends.
std::vector<size_t> LongestShared(const std::vector<std::string>& names, bool reversed) {
  std::vector<std::string> keys(names);
  if (reversed)
    for (std::string& k : keys) std::reverse(k.begin(), k.end());
  std::vector<size_t> order(names.size()), shared(names.size(), 0);
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return keys[a] < keys[b]; });
  for (size_t k = 1; k < order.size(); ++k) {
    const size_t p = CommonPrefix(keys[order[k - 1]], keys[order[k]]);
    shared[order[k - 1]] = std::max(shared[order[k - 1]], p);
    shared[order[k]] = std::max(shared[order[k]], p);
  }
  return shared;
}

// `s` (longer than `max`) cut to `max` bytes: its first bytes (up to a quarter of them), "...",
// the part from `from` on where it differs from the others, "...", its last bytes (a sixth).
std::string CutAround(std::string_view s, size_t max, size_t from) {
  const size_t head = std::min(from, max / 4), tail = max / 6;
  size_t start = from;  // back to the start of the token that differs, 12 bytes at most
  while (start > head && from - start < 12 &&
         std::isalnum(static_cast<unsigned char>(s[start - 1])))
    --start;
  const size_t room = max - head - tail - 6;
  if (start + room + 3 + tail >= s.size()) {  // from `start` on, the rest fits
    return std::string(s.substr(0, head)) + "..." +
           std::string(s.substr(s.size() - (max - head - 3)));
  }
  return std::string(s.substr(0, head)) + "..." + std::string(s.substr(start, room)) + "..." +
         std::string(s.substr(s.size() - tail));
}

}  // namespace

std::vector<std::string> EllipsizeApart(const std::vector<std::string>& names, size_t max) {
  max = std::max<size_t>(max, 16);
  const std::vector<size_t> starts = LongestShared(names, false), ends = LongestShared(names, true);
  std::vector<std::string> out;
  out.reserve(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& s = names[i];
    // EllipsizeMiddle keeps the first two thirds and the last third: enough unless the part
    // that differs lies between them.
    const size_t kept_tail = (max - 3) / 3, kept_head = max - 3 - kept_tail;
    const bool apart = s.size() > max && starts[i] + ends[i] < s.size() && starts[i] >= kept_head &&
                       ends[i] >= kept_tail;
    out.push_back(apart ? CutAround(s, max, starts[i]) : EllipsizeMiddle(s, max));
  }
  return out;
}

std::string EllipsizeMiddle(std::string_view s, size_t max) {
  if (s.size() <= max) return std::string(s);
  const size_t tail = (max - 3) / 3, head = max - 3 - tail;
  return std::string(s.substr(0, head)) + "..." + std::string(s.substr(s.size() - tail));
}

}  // namespace trainprof::base
