#include "trace/kineto/json_structural.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string_view>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define TRAINPROF_JSON_X86 1
#endif

namespace trainprof::trace::json {
namespace {

constexpr uint64_t kEvenBits = 0x5555555555555555ULL;

// The bytes of one block that are quotes, backslashes and structural characters, before
// strings are known.
struct RawMasks {
  uint64_t quote = 0, backslash = 0, structural = 0;
};

RawMasks RawScalar(const char* p) {
  RawMasks m;
  for (int i = 0; i < 64; ++i) {
    const uint64_t bit = uint64_t{1} << i;
    switch (p[i]) {
      case '"':
        m.quote |= bit;
        break;
      case '\\':
        m.backslash |= bit;
        break;
      case '{':
      case '}':
      case '[':
      case ']':
      case ':':
      case ',':
        m.structural |= bit;
        break;
      default:
        break;
    }
  }
  return m;
}

// Bit i set when an odd number of bits at or below i are set in x.
uint64_t PrefixXorShifts(uint64_t x) {
  for (int s = 1; s < 64; s <<= 1) x ^= x << s;
  return x;
}

#if defined(TRAINPROF_JSON_X86)
// The same as one carry-less multiply by all ones.
__attribute__((target("pclmul,sse4.2"))) uint64_t PrefixXorClmul(uint64_t x) {
  const __m128i r = _mm_clmulepi64_si128(_mm_set_epi64x(0, static_cast<int64_t>(x)),
                                         _mm_set1_epi8(static_cast<char>(0xFF)), 0);
  return static_cast<uint64_t>(_mm_cvtsi128_si64(r));
}

// A movemask's bits as the low bits of a mask.
inline uint64_t MaskBits(int movemask) {
  return static_cast<uint64_t>(static_cast<uint32_t>(movemask));
}

// { and [ are } and ] with bit 5 cleared: (b | 0x20) is '{' or '}' for exactly those four.
__attribute__((target("pclmul,sse4.2"))) RawMasks RawSse42(const char* p) {
  RawMasks m;
  const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'),
                lower = _mm_set1_epi8(0x20), open = _mm_set1_epi8('{'), close = _mm_set1_epi8('}'),
                colon = _mm_set1_epi8(':'), comma = _mm_set1_epi8(',');
  for (int k = 0; k < 4; ++k) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k));
    const __m128i folded = _mm_or_si128(x, lower);
    const __m128i st =
        _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(folded, open), _mm_cmpeq_epi8(folded, close)),
                     _mm_or_si128(_mm_cmpeq_epi8(x, colon), _mm_cmpeq_epi8(x, comma)));
    const int shift = 16 * k;
    m.quote |= MaskBits(_mm_movemask_epi8(_mm_cmpeq_epi8(x, quote))) << shift;
    m.backslash |= MaskBits(_mm_movemask_epi8(_mm_cmpeq_epi8(x, backslash))) << shift;
    m.structural |= MaskBits(_mm_movemask_epi8(st)) << shift;
  }
  return m;
}

__attribute__((target("avx2,pclmul"))) RawMasks RawAvx2(const char* p) {
  RawMasks m;
  const __m256i quote = _mm256_set1_epi8('"'), backslash = _mm256_set1_epi8('\\'),
                lower = _mm256_set1_epi8(0x20), open = _mm256_set1_epi8('{'),
                close = _mm256_set1_epi8('}'), colon = _mm256_set1_epi8(':'),
                comma = _mm256_set1_epi8(',');
  for (int k = 0; k < 2; ++k) {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32 * k));
    const __m256i folded = _mm256_or_si256(x, lower);
    const __m256i st = _mm256_or_si256(
        _mm256_or_si256(_mm256_cmpeq_epi8(folded, open), _mm256_cmpeq_epi8(folded, close)),
        _mm256_or_si256(_mm256_cmpeq_epi8(x, colon), _mm256_cmpeq_epi8(x, comma)));
    const int shift = 32 * k;
    m.quote |= MaskBits(_mm256_movemask_epi8(_mm256_cmpeq_epi8(x, quote))) << shift;
    m.backslash |= MaskBits(_mm256_movemask_epi8(_mm256_cmpeq_epi8(x, backslash))) << shift;
    m.structural |= MaskBits(_mm256_movemask_epi8(st)) << shift;
  }
  return m;
}
#endif

// The bytes escaped by a backslash. In a run of backslashes the first escapes the second, the
// third the fourth, and so on; so a run's escaping backslashes sit at even offsets from its
// start. Runs that start on an even bit are found by adding each one's first bit, which carries
// through the run and clears it; the rest started on an odd bit. carry: the last byte of the
// block before escapes this block's first.
uint64_t EscapedBytes(uint64_t backslash, uint64_t* carry) {
  const uint64_t in = *carry;
  const uint64_t bs = backslash & ~in;  // an escaped backslash escapes nothing
  const uint64_t starts = bs & ~(bs << 1);
  const uint64_t even_runs = bs & ~(bs + (starts & kEvenBits));
  const uint64_t escapes = (even_runs & kEvenBits) | (bs & ~even_runs & ~kEvenBits);
  *carry = escapes >> 63;
  return (escapes << 1) | in;
}

template <RawMasks (*Raw)(const char*), uint64_t (*PrefixXor)(uint64_t)>
BlockMasks Classify(const char* p, BlockCarry* carry) {
  const RawMasks raw = Raw(p);
  BlockMasks m;
  m.escaped = EscapedBytes(raw.backslash, &carry->escape);
  m.quote = raw.quote & ~m.escaped;
  m.in_string = PrefixXor(m.quote) ^ carry->in_string;
  carry->in_string = static_cast<uint64_t>(static_cast<int64_t>(m.in_string) >> 63);
  m.structural = raw.structural & ~m.in_string & ~m.escaped;
  return m;
}

using ClassifyFn = BlockMasks (*)(const char*, BlockCarry*);

ClassifyFn FnFor(SimdLevel level) {
#if defined(TRAINPROF_JSON_X86)
  if (level == SimdLevel::kAvx2) return Classify<RawAvx2, PrefixXorClmul>;
  if (level == SimdLevel::kSse42) return Classify<RawSse42, PrefixXorClmul>;
#endif
  (void)level;
  return Classify<RawScalar, PrefixXorShifts>;
}

SimdLevel LevelFromEnv(SimdLevel best) {
  const char* v = std::getenv("TRAINPROF_JSON_SIMD");
  if (v == nullptr) return best;
  const std::string_view s(v);
  SimdLevel want = best;
  if (s == "scalar") want = SimdLevel::kScalar;
  if (s == "sse4.2" || s == "sse42") want = SimdLevel::kSse42;
  return want < best ? want : best;
}

struct Active {
  std::atomic<SimdLevel> level;
  std::atomic<ClassifyFn> fn;
  Active() {
    const SimdLevel l = LevelFromEnv(BestSimdLevel());
    level.store(l);
    fn.store(FnFor(l));
  }
};

Active& TheActive() {
  static Active a;
  return a;
}

}  // namespace

const char* SimdLevelName(SimdLevel level) {
  switch (level) {
    case SimdLevel::kAvx2:
      return "avx2";
    case SimdLevel::kSse42:
      return "sse4.2";
    case SimdLevel::kScalar:
      break;
  }
  return "scalar";
}

SimdLevel BestSimdLevel() {
#if defined(TRAINPROF_JSON_X86)
  static const SimdLevel best = [] {
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("pclmul") || !__builtin_cpu_supports("sse4.2"))
      return SimdLevel::kScalar;
    return __builtin_cpu_supports("avx2") ? SimdLevel::kAvx2 : SimdLevel::kSse42;
  }();
  return best;
#else
  return SimdLevel::kScalar;
#endif
}

SimdLevel ActiveSimdLevel() { return TheActive().level.load(std::memory_order_relaxed); }

SimdLevel SetSimdLevel(SimdLevel level) {
  const SimdLevel l = level < BestSimdLevel() ? level : BestSimdLevel();
  TheActive().level.store(l);
  TheActive().fn.store(FnFor(l));
  return l;
}

BlockMasks ClassifyBlock(const char* p, BlockCarry* carry) {
  return TheActive().fn.load(std::memory_order_relaxed)(p, carry);
}

BlockMasks ClassifyBlockWith(SimdLevel level, const char* p, BlockCarry* carry) {
  return FnFor(level)(p, carry);
}

BlockMasks ClassifyTail(const char* p, size_t n, BlockCarry* carry) {
  char block[64];
  std::memset(block, ' ', sizeof block);
  std::memcpy(block, p, n);
  const BlockCarry in = *carry;
  BlockMasks m = ClassifyBlock(block, carry);
  if (n == 0) {
    *carry = in;
    return BlockMasks{};
  }
  const uint64_t keep = n == 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1;
  // As if the block ended at byte n - 1: does byte n get escaped, is byte n - 1 in a string?
  carry->escape = n == 64 ? carry->escape : (m.escaped >> n) & 1;
  carry->in_string = uint64_t{0} - ((m.in_string >> (n - 1)) & 1);
  m.quote &= keep, m.in_string &= keep, m.structural &= keep, m.escaped &= keep;
  return m;
}

size_t IndexStructurals(const char* p, size_t n, BlockCarry* carry, uint32_t* out) {
  size_t count = 0;
  auto flatten = [&](uint64_t bits, size_t base) {
    for (; bits != 0; bits &= bits - 1)
      out[count++] = static_cast<uint32_t>(base + static_cast<size_t>(__builtin_ctzll(bits)));
  };
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const BlockMasks m = ClassifyBlock(p + i, carry);
    flatten(m.structural | (m.quote & m.in_string), i);
  }
  if (i < n) {
    const BlockMasks m = ClassifyTail(p + i, n - i, carry);
    flatten(m.structural | (m.quote & m.in_string), i);
  }
  return count;
}

namespace {

// The first ',' / '}' / ']' at depth 0 among the structural bytes `bits` of the block at `b`,
// or nullptr; updates *depth.
const char* UnitEndIn(const char* b, uint64_t bits, int64_t* depth) {
  for (; bits != 0; bits &= bits - 1) {
    const char* c = b + __builtin_ctzll(bits);
    switch (*c) {
      case '{':
      case '[':
        ++*depth;
        break;
      case '}':
      case ']':
        if (*depth == 0) return c;
        --*depth;
        break;
      case ',':
        if (*depth == 0) return c;
        break;
      default:
        break;
    }
  }
  return nullptr;
}

}  // namespace

const char* FindUnitEnd(const char* p, const char* e, int64_t* depth, BlockCarry* carry) {
  for (; e - p >= 64; p += 64) {
    if (const char* c = UnitEndIn(p, ClassifyBlock(p, carry).structural, depth)) return c;
  }
  if (p < e) {
    const BlockMasks m = ClassifyTail(p, static_cast<size_t>(e - p), carry);
    if (const char* c = UnitEndIn(p, m.structural, depth)) return c;
  }
  return e;
}

}  // namespace trainprof::trace::json
