// Small text utilities: edit distance for "did you mean", UTC timestamps, CSV/JSON escaping,
// shortening long names.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace trainprof::base {

// Levenshtein distance between a and b.
size_t EditDistance(std::string_view a, std::string_view b);
// The candidate closest to `word`, or "" when none is within a third of its length (at least 2).
std::string NearestWord(std::string_view word, const std::vector<std::string>& candidates);

// "2026-11-22T10:58:03Z" (ISO 8601) and "20261122T105803Z" (for folder names).
std::string UtcIso8601(int64_t unix_ns);
std::string UtcCompact(int64_t unix_ns);

// `s` if it has at most `max` bytes, else its first max - 3 bytes and "..." (max >= 3).
std::string Ellipsize(std::string_view s, size_t max);
// `s` if it has at most `max` bytes, else its start, "...", and its last third (max >= 3): names
// that differ only at the end (a timestamp, a rank) stay apart.
std::string EllipsizeMiddle(std::string_view s, size_t max);

// Each of `names` cut to at most `max` bytes (max >= 16) keeping what tells it apart from the
// others: a name sharing a long start or end with another keeps the part where they differ, with
// "..." for what was cut (three Cijk_..._MT256x192x64_... kernels that differ only in the middle
// stay apart); other long names are cut in the middle. Names of at most `max` bytes are as given.
std::vector<std::string> EllipsizeApart(const std::vector<std::string>& names, size_t max);

// `s` with ASCII capitals made small (other bytes as they are).
std::string AsciiLower(std::string_view s);
// Whether `hay` holds `lower_needle` (written in small letters) in any ASCII case.
bool ContainsNoCase(std::string_view hay, std::string_view lower_needle);
// The same for several needles, `hay` lowered once: whether any is in it.
template <class Needles>
bool ContainsAnyNoCase(std::string_view hay, const Needles& lower_needles) {
  const std::string low = AsciiLower(hay);
  for (std::string_view n : lower_needles)
    if (low.find(n) != std::string::npos) return true;
  return false;
}

// Appends `s` as the body of a JSON string (no quotes), escaping what JSON requires.
void AppendJsonEscaped(std::string& out, std::string_view s);

// Length of the well-formed UTF-8 sequence at p (a byte >= 0x80), 0 when it is not one (an
// overlong form, a surrogate, above U+10FFFF, a stray continuation byte), -1 when the data ends
// inside it. Inline: the JSON scanner calls it for every non-ASCII byte.
inline int Utf8SequenceLength(const char* p, const char* e) {
  auto u = [&](int k) { return static_cast<unsigned char>(p[k]); };
  int n = u(0) >= 0xF0 ? 4 : u(0) >= 0xE0 ? 3 : u(0) >= 0xC2 ? 2 : 0;
  if (n == 0 || u(0) > 0xF4) return 0;
  if (e - p < n) return -1;
  for (int k = 1; k < n; ++k)
    if ((u(k) & 0xC0) != 0x80) return 0;
  if (n == 3 && ((u(0) == 0xE0 && u(1) < 0xA0) || (u(0) == 0xED && u(1) >= 0xA0))) return 0;
  if (n == 4 && ((u(0) == 0xF0 && u(1) < 0x90) || (u(0) == 0xF4 && u(1) >= 0x90))) return 0;
  return n;
}

// True when every byte of `s` belongs to a well-formed UTF-8 sequence (ASCII included).
bool IsValidUtf8(std::string_view s);
// `s` with each byte that does not start a well-formed UTF-8 sequence replaced by U+FFFD.
std::string ValidUtf8(std::string_view s);

// The value of a hexadecimal digit (0-9, a-f, A-F), or -1 for any other character.
inline int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace trainprof::base
