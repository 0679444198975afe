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

// Appends `s` as the body of a JSON string (no quotes), escaping what JSON requires.
void AppendJsonEscaped(std::string& out, std::string_view s);

}  // namespace trainprof::base
