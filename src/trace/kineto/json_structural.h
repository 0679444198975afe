// Structural scanning of JSON, 64 bytes at a time: which bytes are quotes that open or close a
// string, which are inside strings, and which are the structural characters { } [ ] : , outside
// them. The technique is stage 1 of simdjson (Langdale and Lemire, "Parsing gigabytes of JSON per
// second", 2019): byte compares into 64-bit masks, the bytes escaped by an odd run of
// backslashes found with one addition, and the in-string mask as the prefix XOR of the real
// quotes (a carry-less multiply by all ones). Three paths give the same masks: AVX2, SSE4.2
// (with PCLMUL) and plain C++; the fastest the CPU has is chosen at run time, and
// TRAINPROF_JSON_SIMD=scalar|sse42|avx2 (or SetSimdLevel, for tests and the fuzzer) forces one.
//
//   BlockCarry carry;                       // one per stream of bytes, blocks in order
//   for (; e - p >= 64; p += 64) {
//     BlockMasks m = ClassifyBlock(p, &carry);
//     for (uint64_t s = m.structural; s != 0; s &= s - 1) Use(p + __builtin_ctzll(s));
//   }
#pragma once

#include <cstddef>
#include <cstdint>

namespace trainprof::trace::json {

enum class SimdLevel { kScalar, kSse42, kAvx2 };

// "scalar", "sse4.2" or "avx2".
const char* SimdLevelName(SimdLevel level);

// The path in use: the best this CPU runs, unless TRAINPROF_JSON_SIMD or SetSimdLevel chose a
// lower one.
SimdLevel ActiveSimdLevel();
// The best path this CPU runs.
SimdLevel BestSimdLevel();
// Forces a path (a level above BestSimdLevel() gives BestSimdLevel()); returns the one in use.
// Not thread-safe against scans running at the same time: set it before reading.
SimdLevel SetSimdLevel(SimdLevel level);

// What carries from one 64-byte block to the next.
struct BlockCarry {
  uint64_t escape = 0;     // 1: the last byte was a backslash that escapes the next byte
  uint64_t in_string = 0;  // all ones: the block ended inside a string
};

// Bit i stands for byte i of the block.
struct BlockMasks {
  uint64_t quote = 0;       // quotes that open or close a string (not escaped ones)
  uint64_t in_string = 0;   // bytes of strings: the opening quote and the contents, not the close
  uint64_t structural = 0;  // { } [ ] : , outside strings (and not escaped: invalid JSON)
  uint64_t escaped = 0;     // bytes right after an escaping backslash, in strings or not
};

// The masks of the 64 bytes at `p` (all must be readable), given and updating the carry.
BlockMasks ClassifyBlock(const char* p, BlockCarry* carry);
// The same on a path of one's choosing (tests, benchmarks); `level` must be one the CPU runs.
BlockMasks ClassifyBlockWith(SimdLevel level, const char* p, BlockCarry* carry);

// The masks of a last block shorter than 64 bytes ([p, p + n), n < 64): the bytes past n read
// as spaces.
BlockMasks ClassifyTail(const char* p, size_t n, BlockCarry* carry);

// Stage 1 over [p, p + n): writes the offsets (from p) of every structural character and every
// string-opening quote, in order, to `out` (room for n + 64 entries) and returns how many.
// Offsets are 32-bit: n must be below 4 GiB.
size_t IndexStructurals(const char* p, size_t n, BlockCarry* carry, uint32_t* out);

// The end of the JSON value or "key": value member that starts at or after `p`: the first ',',
// '}' or ']' at depth 0 outside strings, in [p, e); e when there is none. `*depth` and `*carry`
// (begin at 0 and {}) carry the state when a caller scans a value in pieces. Only brackets
// count; nothing is checked.
const char* FindUnitEnd(const char* p, const char* e, int64_t* depth, BlockCarry* carry);

}  // namespace trainprof::trace::json
