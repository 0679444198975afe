// Values as little-endian bytes appended to a string, and read back with bounds checked: the
// framing of what one process sends another (trace/file_shares, cli/mpi_analyze) and of rows
// kept packed in memory (report/packed_rows). The summary file has its own field codec
// (analysis/summary_codec.cc).
//
//   std::string out;
//   base::PutU64(out, 7), base::PutText(out, "rank0.json");
//   base::ByteReader r{out};
//   uint64_t n = r.U64();  std::string s = r.Text();
//   if (!r.ok) ...;        // something was cut short
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

namespace trainprof::base {

static_assert(std::endian::native == std::endian::little, "bytes are written little-endian");

// A trivially copyable value's bytes (an int64, a double).
template <typename T>
requires std::is_trivially_copyable_v<T>
void PutRaw(std::string& out, const T& v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}
inline void PutU64(std::string& out, uint64_t v) { PutRaw(out, v); }
// Its length (8 bytes), then its bytes.
inline void PutText(std::string& out, std::string_view s) {
  PutU64(out, s.size());
  out += s;
}

// Reads what Put* wrote. Once anything is cut short, `ok` is false and every read gives 0 or "".
struct ByteReader {
  std::string_view in;
  bool ok = true;

  template <typename T>
  requires std::is_trivially_copyable_v<T> T Raw() {
    T v{};
    if (!ok || in.size() < sizeof v) return ok = false, T{};
    std::memcpy(&v, in.data(), sizeof v);
    in.remove_prefix(sizeof v);
    return v;
  }
  uint64_t U64() { return Raw<uint64_t>(); }
  // `n` bytes as they are.
  std::string_view Bytes(uint64_t n) {
    if (!ok || n > in.size()) return ok = false, std::string_view();
    std::string_view s = in.substr(0, n);
    in.remove_prefix(n);
    return s;
  }
  std::string Text() { return std::string(Bytes(U64())); }
  // A count of items of at least `least` bytes each: no more than the bytes left could hold.
  uint64_t Count(uint64_t least) {
    const uint64_t n = U64();
    if (n > in.size() / least) return ok = false, 0;
    return n;
  }
  bool done() const { return ok && in.empty(); }
};

}  // namespace trainprof::base
