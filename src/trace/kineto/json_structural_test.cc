#include "trace/kineto/json_structural.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace trainprof::trace::json {
namespace {

std::vector<SimdLevel> Levels() {
  std::vector<SimdLevel> out = {SimdLevel::kScalar};
  if (BestSimdLevel() >= SimdLevel::kSse42) out.push_back(SimdLevel::kSse42);
  if (BestSimdLevel() >= SimdLevel::kAvx2) out.push_back(SimdLevel::kAvx2);
  return out;
}

// The masks by walking the bytes one at a time, as a reader of JSON would.
std::vector<BlockMasks> Reference(const std::string& s) {
  std::vector<BlockMasks> out(s.size() / 64);
  bool in_string = false, escape = false;
  for (size_t i = 0; i < out.size() * 64; ++i) {
    BlockMasks& m = out[i / 64];
    const uint64_t bit = uint64_t{1} << (i % 64);
    const char c = s[i];
    if (escape) {
      m.escaped |= bit;
      escape = false;
      if (in_string) m.in_string |= bit;
      continue;
    }
    if (c == '\\') escape = true;
    if (c == '"') {
      m.quote |= bit;
      in_string = !in_string;
      if (in_string) m.in_string |= bit;
      continue;
    }
    if (in_string) {
      m.in_string |= bit;
    } else if (c == '{' || c == '}' || c == '[' || c == ']' || c == ':' || c == ',') {
      m.structural |= bit;
    }
  }
  return out;
}

// Bytes drawn mostly from the ones that matter, runs of backslashes included.
std::string RandomJsonish(size_t n, uint32_t seed) {
  static const char kAlphabet[] = "\"\\\\\\{}[]:, ax\n\xc3\xa9";
  std::mt19937 rng(seed);
  std::string s(n, ' ');
  for (char& c : s) c = kAlphabet[rng() % (sizeof kAlphabet - 1)];
  return s;
}

void ExpectSameMasks(const BlockMasks& want, const BlockMasks& got, size_t block) {
  EXPECT_EQ(want.quote, got.quote) << "block " << block;
  EXPECT_EQ(want.in_string, got.in_string) << "block " << block;
  EXPECT_EQ(want.structural, got.structural) << "block " << block;
  EXPECT_EQ(want.escaped, got.escaped) << "block " << block;
}

TEST(JsonStructural, EveryPathGivesTheReferenceMasks) {
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    const std::string s = RandomJsonish(64 * 50, seed);
    const std::vector<BlockMasks> want = Reference(s);
    for (SimdLevel level : Levels()) {
      SCOPED_TRACE(SimdLevelName(level));
      BlockCarry carry;
      for (size_t b = 0; b < want.size(); ++b)
        ExpectSameMasks(want[b], ClassifyBlockWith(level, s.data() + 64 * b, &carry), b);
    }
  }
}

TEST(JsonStructural, BackslashRunsAcrossBlockEnds) {
  // A run of k backslashes ending at each offset around a block boundary, then a quote: the
  // quote is escaped exactly when k is odd.
  for (int k = 1; k <= 9; ++k) {
    for (int end = 56; end <= 72; ++end) {
      std::string s(128, 'a');
      s[0] = '"';
      for (int i = end - k; i < end; ++i) s[i] = '\\';
      s[end] = '"';
      const std::vector<BlockMasks> want = Reference(s);
      for (SimdLevel level : Levels()) {
        BlockCarry carry;
        for (size_t b = 0; b < 2; ++b) {
          const BlockMasks got = ClassifyBlockWith(level, s.data() + 64 * b, &carry);
          ExpectSameMasks(want[b], got, b);
        }
        const uint64_t quote_bit = uint64_t{1} << (end % 64);
        EXPECT_EQ((want[end / 64].quote & quote_bit) == 0, k % 2 == 1) << k << " at " << end;
      }
    }
  }
}

TEST(JsonStructural, StringsAcrossBlocksHideTheirBrackets) {
  std::string s = "{\"k\": \"";
  s += std::string(100, '[') + "\\\"" + std::string(40, '}') + "\", \"v\": [1, 2]}";
  s.resize(256, ' ');
  for (SimdLevel level : Levels()) {
    BlockCarry carry;
    std::vector<size_t> seen;
    for (size_t b = 0; b < 4; ++b) {
      uint64_t bits = ClassifyBlockWith(level, s.data() + 64 * b, &carry).structural;
      for (; bits != 0; bits &= bits - 1) seen.push_back(64 * b + __builtin_ctzll(bits));
    }
    std::vector<size_t> want;
    for (size_t i = 0; i < s.size(); ++i)
      if (i == 0 || i == 4 || i > 7 + 142) {
        const char c = s[i];
        if (c == '{' || c == '}' || c == '[' || c == ']' || c == ':' || c == ',') want.push_back(i);
      }
    EXPECT_EQ(seen, want) << SimdLevelName(level);
  }
}

TEST(JsonStructural, IndexIsTheSameOnEveryPathAndAnyTail) {
  const std::string s = RandomJsonish(64 * 20 + 37, 7);
  std::vector<std::vector<uint32_t>> indices;
  for (SimdLevel level : Levels()) {
    SetSimdLevel(level);
    std::vector<uint32_t> out(s.size() + 64);
    BlockCarry carry;
    out.resize(IndexStructurals(s.data(), s.size(), &carry, out.data()));
    indices.push_back(out);
  }
  SetSimdLevel(SimdLevel::kAvx2);
  for (size_t i = 1; i < indices.size(); ++i) EXPECT_EQ(indices[0], indices[i]);
  EXPECT_FALSE(indices[0].empty());
}

// The unit's end found in pieces (as the window refills) is where one byte-at-a-time walk finds
// it, on every path.
size_t ReferenceUnitEnd(const std::string& s) {
  int depth = 0;
  bool in_string = false, escape = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (escape) {
      escape = false;
      continue;
    }
    if (c == '\\') {
      escape = true;
      continue;
    }
    if (in_string) {
      in_string = c != '"';
      continue;
    }
    if (c == '"') in_string = true;
    if (c == '{' || c == '[') ++depth;
    if ((c == '}' || c == ']' || c == ',') && depth == 0) return i;
    if (c == '}' || c == ']') --depth;
  }
  return s.size();
}

TEST(JsonStructural, UnitEndInPiecesOnEveryPath) {
  const std::string unit =
      "\"na\\\\me\": {\"a\": [1, {\"b\": \"x\\\"]},\"}], \"c\": \"\\\\\\\"}\"}, \"next\": 1";
  std::string text = unit;
  for (int i = 0; i < 5; ++i) text.insert(12, "{\"pad\\\\\\\"\": [\"]]]\", 7]},");
  text.insert(12, "[");
  text.insert(text.find("}, \"next\"") + 1, "]");
  const size_t want = ReferenceUnitEnd(text);
  ASSERT_LT(want, text.size());
  for (SimdLevel level : Levels()) {
    SetSimdLevel(level);
    for (size_t piece : {1, 3, 17, 63, 64, 65, 200}) {
      int64_t depth = 0;
      BlockCarry carry;
      size_t at = 0, found = text.size();
      while (at < text.size()) {
        const size_t n = std::min(piece, text.size() - at);
        const char* b = text.data() + at;
        const char* stop = FindUnitEnd(b, b + n, &depth, &carry);
        if (stop != b + n) {
          found = at + static_cast<size_t>(stop - b);
          break;
        }
        at += n;
      }
      EXPECT_EQ(found, want) << SimdLevelName(level) << " pieces of " << piece;
    }
  }
  SetSimdLevel(SimdLevel::kAvx2);
}

TEST(JsonStructural, ForcingALevelAboveTheCpuGivesTheBest) {
  EXPECT_EQ(SetSimdLevel(SimdLevel::kAvx2), BestSimdLevel());
  EXPECT_EQ(SetSimdLevel(SimdLevel::kScalar), SimdLevel::kScalar);
  EXPECT_EQ(ActiveSimdLevel(), SimdLevel::kScalar);
  SetSimdLevel(SimdLevel::kAvx2);
}

}  // namespace
}  // namespace trainprof::trace::json
