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
#include <string>
#include <string_view>

#include "trainprof/status.h"

namespace trainprof::trace {

// Bytes not zeroed when allocated: a 4 MiB window over a 1 MB file touches only the pages it
// fills (with a zero-filled vector, 1,000 small rank files paid 4 GB of page clearing).
class RawBuffer {
 public:
  explicit RawBuffer(size_t n) : data_(new char[n]), size_(n) {}
  char* data() const { return data_.get(); }
  size_t size() const { return size_; }
  // Reallocates to `n` bytes, keeping the first `keep`.
  void Grow(size_t n, size_t keep);
  // Makes the pages of bytes [from, to) present in one call, for a range about to be written:
  // a page faulted in on its first write costs about twice as much on a VM
  // (docs/perf-log/reader-and-analyze.md). For a range under a MiB, or on a kernel without
  // MADV_POPULATE_WRITE, it does nothing.
  void Populate(size_t from, size_t to) const;

 private:
  std::unique_ptr<char[]> data_;
  size_t size_;
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
};

// A file opened once for reading: its size when opened and its first bytes, read to tell its
// kind and then given back to its reader (OpenTraceBytes), so a rank file costs one open, one
// fstat and the reads of its bytes (each system call is dear on a VM: 10,000 rank files were
// opened three times each). Move-only; closes the file unless a source took it.
class OpenedFile {
 public:
  // Errors: "<path>: cannot open: <why>", or "<path>: cannot read: <why>" (a folder).
  static StatusOr<OpenedFile> Open(const std::string& path, size_t head_bytes = 512);
  OpenedFile(OpenedFile&& o) noexcept;
  OpenedFile& operator=(OpenedFile&& o) = delete;
  ~OpenedFile();
  const std::string& path() const { return path_; }
  // The size when opened; -1 when it is no regular file's.
  int64_t size() const { return size_; }
  // The first bytes (fewer when the file is shorter); the file is read on from there.
  std::string_view head() const { return head_; }
  int TakeFd();  // the descriptor, now the caller's to close

 private:
  OpenedFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  int fd_ = -1;
  int64_t size_ = -1;
  std::string head_;
};

// The file at `path`, gunzipped when it starts with gzip's magic bytes (not by its name), on a
// second thread unless `inflate_ahead` is false (then in the caller's Read()).
StatusOr<std::unique_ptr<ByteSource>> OpenTraceBytes(const std::string& path,
                                                     bool inflate_ahead = true);
// The same for a file already opened: its head replayed, then the rest. A regular file's bytes
// end at the size it had when opened (no read past it to find the end).
StatusOr<std::unique_ptr<ByteSource>> OpenTraceBytes(OpenedFile file, bool inflate_ahead = true);

// `inner` read ahead on a second thread, a few MiB deep (what OpenTraceBytes does for gzip).
std::unique_ptr<ByteSource> ReadAhead(std::unique_ptr<ByteSource> inner);

// The bytes of a file from `offset`, as they are (never gunzipped), to its end or for `length`
// bytes at most (-1: to the end): one part of a big plain trace read on its own thread.
// raw_bytes_done() counts from `offset`.
StatusOr<std::unique_ptr<ByteSource>> OpenFileAt(const std::string& path, int64_t offset,
                                                 int64_t length = -1);

// The decoded size a gzip file states in its last four bytes (ISIZE: modulo 2^32, and only the
// last member's), or -1 when it cannot be read. A hint for where to cut, never trusted.
int64_t GzipStatedSize(const std::string& path);

// `prefix`, then the rest of `rest` (bytes read ahead to look at them, then given back).
std::unique_ptr<ByteSource> PrefixBytes(std::string prefix, std::unique_ptr<ByteSource> rest);

// Reads and drops up to `n` bytes; returns how many there were (fewer: the source ended). When
// `first` is given it receives the bytes of the first read (where a document starts).
// Errors: the source's.
StatusOr<int64_t> SkipBytes(ByteSource* src, int64_t n, std::string* first);

// The same over bytes already in memory (tests, the fuzzer); `s` must outlive the source.
std::unique_ptr<ByteSource> MemoryTraceBytes(std::string_view s, const std::string& name);

// True when this build inflates with ISA-L (else zlib).
bool InflatesWithIsal();

}  // namespace trainprof::trace
