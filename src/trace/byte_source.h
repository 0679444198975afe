// Byte sources for the trace reader: a file, memory, or a gzip stream over either, inflated on a
// second thread so that decompression and parsing overlap. The JSON scanner (json_scanner.h)
// pulls decoded bytes from one; it never knows whether they were compressed.
//
//   StatusOr<std::unique_ptr<ByteSource>> src = OpenTraceBytes("rank0.pt.trace.json.gz");
//   if (!src.ok()) return src.status();            // "<file>: cannot open: ..."
//   char buf[1 << 16];
//   for (;;) {
//     TRAINPROF_ASSIGN_OR_RETURN(size_t n, (*src)->Read(buf, sizeof buf));
//     if (n == 0) break;                           // the end; (*src)->cut_short() if it was cut
//   }
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trainprof/status.h"

namespace trainprof::trace {

// Bytes not zeroed when allocated: a 4 MiB window over a 1 MB file touches only the pages it
// fills (with a zero-filled vector, 1,000 small rank files paid 4 GB of page clearing). A `huge`
// buffer of 2 MiB or more is mapped on 2 MiB boundaries and asked for transparent huge pages:
// the read-ahead of a gzip read in two parts fills ~25 MB of fresh memory, and in 4 KiB pages
// the faults cost more than the inflating. Small buffers stay in 4 KiB pages, where touching one
// byte does not clear 2 MiB.
class RawBuffer {
 public:
  explicit RawBuffer(size_t n, bool huge = false);
  ~RawBuffer();
  RawBuffer(const RawBuffer&) = delete;
  RawBuffer& operator=(const RawBuffer&) = delete;
  char* data() const { return data_; }
  size_t size() const { return size_; }
  // Reallocates to `n` bytes, keeping the first `keep`.
  void Grow(size_t n, size_t keep);

 private:
  static char* Allocate(size_t n, bool huge, size_t* mapped);
  static void Release(char* p, size_t mapped);
  char* data_ = nullptr;
  size_t size_ = 0;
  size_t mapped_ = 0;  // bytes mapped (0: from new[])
};

// Decoded bytes a read-ahead source holds that its reader has not taken yet, shared so that a
// second parser can read them (the rest of a gzip trace, parsed in two parts).
struct DecodedChunk {
  DecodedChunk(size_t n, bool huge) : data(n, huge) {}
  RawBuffer data;
  size_t size = 0;
};
struct DecodedRest {
  std::vector<std::shared_ptr<const DecodedChunk>> chunks;
  size_t first_skip = 0;  // bytes of chunks[0] the reader has already taken
  int64_t offset = 0;     // decoded offset of the rest's first byte
  int64_t end() const;    // decoded offset just past the last byte
  // Up to `n` bytes from decoded offset `from` (clamped to the rest).
  std::string Copy(int64_t from, size_t n) const;
};

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Writes up to `max` bytes at `dst`; 0 means the end. Errors name the file (and, for corrupt
  // gzip data, the compressed byte offset).
  virtual StatusOr<size_t> Read(char* dst, size_t max) = 0;
  // Bytes of the underlying file consumed so far, as on disk (progress, error positions).
  virtual int64_t raw_bytes_done() const = 0;
  // True when the data ended before its format said it would (a gzip stream cut short).
  virtual bool cut_short() const { return false; }
  // "gzip (ISA-L)", "gzip (zlib)" or "plain": how the bytes were decoded, for the report.
  virtual const char* decoder() const { return "plain"; }
  // A source that decodes ahead on its own thread: waits until decoding has ended and returns
  // what Read() has not handed out yet. nullopt when decoding failed or was cut short (the
  // reader meets that itself), when what is left fills the read-ahead's limit before decoding
  // ends (the source then reads on a few MiB ahead, as a plain one), or when the source does
  // not decode ahead. Never waits on the reader: it returns even if Read() is not called.
  virtual std::optional<DecodedRest> WaitForRest() { return std::nullopt; }
};

// The file at `path`, gunzipped when it starts with gzip's magic bytes (not by its name), on a
// second thread that runs up to `ahead_bytes` ahead of the reader.
StatusOr<std::unique_ptr<ByteSource>> OpenTraceBytes(const std::string& path,
                                                     size_t ahead_bytes = size_t{4} << 20);

// The bytes of `rest` from decoded offset `from` to its end; raw_bytes_done() counts from `from`.
std::unique_ptr<ByteSource> RestBytes(DecodedRest rest, int64_t from);

// The bytes of a file from `offset` to its end, as they are (never gunzipped): one segment of a
// big plain trace read on its own thread. raw_bytes_done() counts from `offset`.
StatusOr<std::unique_ptr<ByteSource>> OpenFileAt(const std::string& path, int64_t offset);

// The same over bytes already in memory (tests, the fuzzer); `s` must outlive the source.
std::unique_ptr<ByteSource> MemoryTraceBytes(std::string_view s, const std::string& name);

// True when this build inflates with ISA-L (else zlib).
bool InflatesWithIsal();

}  // namespace trainprof::trace
