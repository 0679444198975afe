#include "trace/byte_source.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#if TRAINPROF_HAVE_ISAL
#include <isa-l/igzip_lib.h>
#endif

namespace trainprof::trace {
namespace {

class MemorySource : public ByteSource {
 public:
  explicit MemorySource(std::string_view s) : s_(s) {}
  StatusOr<size_t> Read(char* dst, size_t max) override {
    size_t n = std::min(max, s_.size() - pos_);
    std::memcpy(dst, s_.data() + pos_, n);
    pos_ += n;
    return n;
  }
  int64_t raw_bytes_done() const override { return static_cast<int64_t>(pos_); }

 private:
  std::string_view s_;
  size_t pos_ = 0;
};

class FileSource : public ByteSource {
 public:
  FileSource(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~FileSource() override { ::close(fd_); }
  StatusOr<size_t> Read(char* dst, size_t max) override {
    for (;;) {
      ssize_t n = ::read(fd_, dst, max);
      if (n >= 0) {
        done_ += n;
        return static_cast<size_t>(n);
      }
      if (errno != EINTR)
        return InvalidArgument(fmt::format("{}: cannot read: {}", path_, std::strerror(errno)));
    }
  }
  int64_t raw_bytes_done() const override { return done_; }

 private:
  int fd_;
  std::string path_;
  int64_t done_ = 0;
};

// One gzip member after another, inflated into the caller's buffer. The two implementations
// (ISA-L's igzip, about 3x faster, and zlib) share the member loop in GzipSource.
class Inflater {
 public:
  virtual ~Inflater() = default;
  virtual void Reset() = 0;
  virtual void SetInput(const char* in, size_t n) = 0;
  virtual size_t avail_in() const = 0;
  // Inflates into [dst, dst + max); sets *written. Returns 1 at the end of a member, 0 to go
  // on, or -1 on corrupt data (*why says what).
  virtual int Inflate(char* dst, size_t max, size_t* written, const char** why) = 0;
  virtual const char* name() const = 0;
};

class ZlibInflater : public Inflater {
 public:
  ZlibInflater() {
    zs_ = {};
    inflateInit2(&zs_, 15 + 16);  // 16: gzip wrapper only
  }
  ~ZlibInflater() override { inflateEnd(&zs_); }
  void Reset() override { inflateReset(&zs_); }
  void SetInput(const char* in, size_t n) override {
    zs_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in));
    zs_.avail_in = static_cast<uInt>(n);
  }
  size_t avail_in() const override { return zs_.avail_in; }
  int Inflate(char* dst, size_t max, size_t* written, const char** why) override {
    zs_.next_out = reinterpret_cast<Bytef*>(dst);
    zs_.avail_out = static_cast<uInt>(std::min<size_t>(max, 1u << 30));
    int rc = inflate(&zs_, Z_NO_FLUSH);
    *written = static_cast<size_t>(reinterpret_cast<char*>(zs_.next_out) - dst);
    if (rc == Z_STREAM_END) return 1;
    if (rc == Z_OK || rc == Z_BUF_ERROR) return 0;
    *why = zs_.msg ? zs_.msg : "inflate failed";
    return -1;
  }
  const char* name() const override { return "gzip (zlib)"; }

 private:
  z_stream zs_;
};

#if TRAINPROF_HAVE_ISAL
class IsalInflater : public Inflater {
 public:
  IsalInflater() { Reset(); }
  void Reset() override {
    const uint8_t* in = st_.next_in;
    uint32_t n = st_.avail_in;
    isal_inflate_init(&st_);
    st_.crc_flag = ISAL_GZIP;
    st_.next_in = const_cast<uint8_t*>(in);
    st_.avail_in = n;
  }
  void SetInput(const char* in, size_t n) override {
    st_.next_in = reinterpret_cast<uint8_t*>(const_cast<char*>(in));
    st_.avail_in = static_cast<uint32_t>(n);
  }
  size_t avail_in() const override { return st_.avail_in; }
  int Inflate(char* dst, size_t max, size_t* written, const char** why) override {
    st_.next_out = reinterpret_cast<uint8_t*>(dst);
    st_.avail_out = static_cast<uint32_t>(std::min<size_t>(max, 1u << 30));
    int rc = isal_inflate(&st_);
    *written = static_cast<size_t>(reinterpret_cast<char*>(st_.next_out) - dst);
    if (rc < 0) {
      *why = rc == ISAL_INCORRECT_CHECKSUM ? "incorrect data check"
             : rc == ISAL_INVALID_WRAPPER  ? "not a gzip header"
                                           : "invalid deflate data";
      return -1;
    }
    return st_.block_state == ISAL_BLOCK_FINISH ? 1 : 0;
  }
  const char* name() const override { return "gzip (ISA-L)"; }

 private:
  inflate_state st_{};
};
#endif

std::unique_ptr<Inflater> NewInflater() {
#if TRAINPROF_HAVE_ISAL
  return std::make_unique<IsalInflater>();
#else
  return std::make_unique<ZlibInflater>();
#endif
}

}  // namespace

namespace {
constexpr size_t kHugePage = size_t{2} << 20;
}  // namespace

char* RawBuffer::Allocate(size_t n, bool huge, size_t* mapped) {
  *mapped = 0;
  if (!huge || n < kHugePage) return new char[n];
  // Map one huge page more than asked, then trim both ends to a 2 MiB-aligned span.
  const size_t len = (n + kHugePage - 1) / kHugePage * kHugePage;
  void* m =
      ::mmap(nullptr, len + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return new char[n];
  auto* raw = static_cast<char*>(m);
  auto addr = reinterpret_cast<uintptr_t>(raw);
  char* start = raw + ((kHugePage - addr % kHugePage) % kHugePage);
  if (start > raw) ::munmap(raw, static_cast<size_t>(start - raw));
  char* end = start + len;
  if (end < raw + len + kHugePage) ::munmap(end, static_cast<size_t>(raw + len + kHugePage - end));
  ::madvise(start, len, MADV_HUGEPAGE);
  *mapped = len;
  return start;
}

void RawBuffer::Release(char* p, size_t mapped) {
  if (mapped > 0)
    ::munmap(p, mapped);
  else
    delete[] p;
}

RawBuffer::RawBuffer(size_t n, bool huge) : size_(n) { data_ = Allocate(n, huge, &mapped_); }

RawBuffer::~RawBuffer() { Release(data_, mapped_); }

void RawBuffer::Grow(size_t n, size_t keep) {
  size_t mapped = 0;
  char* d = Allocate(n, mapped_ > 0, &mapped);
  std::memcpy(d, data_, std::min(keep, n));
  Release(data_, mapped_);
  data_ = d;
  size_ = n;
  mapped_ = mapped;
}

namespace {

class GzipSource : public ByteSource {
 public:
  GzipSource(std::unique_ptr<ByteSource> raw, std::string path)
      : raw_(std::move(raw)), path_(std::move(path)), z_(NewInflater()) {
    in_.resize(size_t{256} << 10);
  }
  StatusOr<size_t> Read(char* dst, size_t max) override {
    size_t total = 0;
    while (total < max && !done_) {
      if (z_->avail_in() == 0) {
        TRAINPROF_ASSIGN_OR_RETURN(bool more, Fill());
        if (!more) {
          // The compressed stream stops before its end: a file cut while being written.
          cut_short_ = in_member_;
          done_ = true;
          break;
        }
      }
      size_t n = 0;
      const char* why = nullptr;
      int rc = z_->Inflate(dst + total, max - total, &n, &why);
      total += n;
      in_member_ = true;
      if (rc < 0)
        return InvalidArgument(
            fmt::format("{}: compressed byte {}: corrupt gzip data ({})", path_,
                        raw_->raw_bytes_done() - static_cast<int64_t>(z_->avail_in()), why));
      if (rc == 1) {
        // gzip files may hold several members; go on while input remains.
        in_member_ = false;
        if (z_->avail_in() == 0) {
          TRAINPROF_ASSIGN_OR_RETURN(bool more, Fill());
          if (!more) done_ = true;
        }
        if (!done_) z_->Reset();
      }
    }
    return total;
  }
  int64_t raw_bytes_done() const override { return raw_->raw_bytes_done(); }
  bool cut_short() const override { return cut_short_; }
  const char* decoder() const override { return z_->name(); }

 private:
  StatusOr<bool> Fill() {
    TRAINPROF_ASSIGN_OR_RETURN(size_t n, raw_->Read(in_.data(), in_.size()));
    z_->SetInput(in_.data(), n);
    return n > 0;
  }

  std::unique_ptr<ByteSource> raw_;
  std::string path_;
  std::unique_ptr<Inflater> z_;
  std::vector<char> in_;
  bool done_ = false, in_member_ = false, cut_short_ = false;
};

// Reads another source ahead on its own thread, up to `ahead_bytes` deep, so that the caller's
// work (parsing) and the source's (inflating) run at the same time. Chunks the reader has taken
// are reused unless WaitForRest() handed them to a second reader.
class ReadAheadSource : public ByteSource {
 public:
  ReadAheadSource(std::unique_ptr<ByteSource> inner, size_t ahead_bytes)
      : inner_(std::move(inner)),
        huge_(ahead_bytes >= kHugeAhead),
        chunk_bytes_(huge_ ? size_t{2} << 20 : size_t{1} << 20),
        ahead_(std::max(ahead_bytes, chunk_bytes_)) {
    thread_ = std::thread([this] { Produce(); });
  }
  ~ReadAheadSource() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  StatusOr<size_t> Read(char* dst, size_t max) override {
    size_t total = 0;
    while (total < max) {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return !queue_.empty() || ended_; });
      if (queue_.empty()) {
        if (!status_.ok() && total == 0) return status_;
        break;
      }
      std::shared_ptr<DecodedChunk> c = queue_.front();
      const size_t from = used_;
      lock.unlock();
      size_t n = std::min(max - total, c->size - from);
      std::memcpy(dst + total, c->data.data() + from, n);
      total += n;
      lock.lock();
      used_ += n;
      if (used_ < c->size) continue;
      queue_.pop_front();
      queued_ -= c->size;
      taken_ += static_cast<int64_t>(c->size);
      used_ = 0;
      if (c.use_count() == 1 && free_.size() < kKeepFree) free_.push_back(std::move(c));
      cv_.notify_all();
    }
    return total;
  }
  int64_t raw_bytes_done() const override { return raw_done_.load(std::memory_order_relaxed); }
  bool cut_short() const override { return inner_->cut_short(); }
  const char* decoder() const override { return inner_->decoder(); }

  std::optional<DecodedRest> WaitForRest() override {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return ended_ || queued_ >= ahead_; });
    if (!ended_) {  // more than the limit left: no rest to hand out; read on shallow
      ahead_ = std::min(ahead_, kShallowAhead);
      cv_.notify_all();
      return std::nullopt;
    }
    if (!status_.ok() || inner_->cut_short()) return std::nullopt;
    DecodedRest rest;
    rest.chunks.assign(queue_.begin(), queue_.end());
    rest.first_skip = used_;
    rest.offset = taken_ + static_cast<int64_t>(used_);
    return rest;
  }

 private:
  // Read-aheads this deep (a gzip read in two parts) fill their chunks in huge pages.
  static constexpr size_t kHugeAhead = size_t{16} << 20;
  static constexpr size_t kShallowAhead = size_t{4} << 20;
  static constexpr size_t kKeepFree = 4;

  std::shared_ptr<DecodedChunk> NewChunk() {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.empty()) return std::make_shared<DecodedChunk>(chunk_bytes_, huge_);
    std::shared_ptr<DecodedChunk> c = std::move(free_.back());
    free_.pop_back();
    return c;
  }

  void Produce() {
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return queued_ < ahead_ || stop_; });
        if (stop_) return;
      }
      std::shared_ptr<DecodedChunk> c = NewChunk();
      StatusOr<size_t> n = inner_->Read(c->data.data(), c->data.size());
      raw_done_.store(inner_->raw_bytes_done(), std::memory_order_relaxed);
      std::lock_guard<std::mutex> lock(mu_);
      if (!n.ok() || *n == 0) {
        if (!n.ok()) status_ = n.status();
        ended_ = true;
        cv_.notify_all();
        return;
      }
      c->size = *n;
      queued_ += *n;
      queue_.push_back(std::move(c));
      cv_.notify_all();
    }
  }

  std::unique_ptr<ByteSource> inner_;
  const bool huge_;
  const size_t chunk_bytes_;
  size_t ahead_;                                     // guarded by mu_
  std::deque<std::shared_ptr<DecodedChunk>> queue_;  // decoded, not yet taken whole by Read
  std::vector<std::shared_ptr<DecodedChunk>> free_;
  size_t used_ = 0;    // bytes of queue_.front() taken
  size_t queued_ = 0;  // bytes in queue_
  int64_t taken_ = 0;  // bytes of the chunks already popped
  std::mutex mu_;
  std::condition_variable cv_;
  bool ended_ = false, stop_ = false;
  Status status_ = Status::Ok();
  std::atomic<int64_t> raw_done_{0};
  std::thread thread_;
};

// The decoded bytes of a DecodedRest from one offset on.
class RestSource : public ByteSource {
 public:
  RestSource(DecodedRest rest, int64_t from) : rest_(std::move(rest)) {
    int64_t at = rest_.offset;
    size_t skip = rest_.first_skip;
    for (; k_ < rest_.chunks.size(); ++k_, skip = 0) {
      const int64_t n = static_cast<int64_t>(rest_.chunks[k_]->size - skip);
      if (from < at + n) {
        used_ = skip + static_cast<size_t>(std::max<int64_t>(0, from - at));
        break;
      }
      at += n;
    }
  }
  StatusOr<size_t> Read(char* dst, size_t max) override {
    size_t total = 0;
    while (total < max && k_ < rest_.chunks.size()) {
      const DecodedChunk& c = *rest_.chunks[k_];
      size_t n = std::min(max - total, c.size - used_);
      std::memcpy(dst + total, c.data.data() + used_, n);
      used_ += n;
      total += n;
      if (used_ == c.size) ++k_, used_ = 0;
    }
    done_ += static_cast<int64_t>(total);
    return total;
  }
  int64_t raw_bytes_done() const override { return done_; }

 private:
  DecodedRest rest_;
  size_t k_ = 0, used_ = 0;
  int64_t done_ = 0;
};

// Replays bytes already read (the magic bytes), then the rest of another source.
class PrefixedSource : public ByteSource {
 public:
  PrefixedSource(std::string prefix, std::unique_ptr<ByteSource> rest)
      : prefix_(std::move(prefix)), rest_(std::move(rest)) {}
  StatusOr<size_t> Read(char* dst, size_t max) override {
    if (pos_ < prefix_.size()) {
      size_t n = std::min(max, prefix_.size() - pos_);
      std::memcpy(dst, prefix_.data() + pos_, n);
      pos_ += n;
      return n;
    }
    return rest_->Read(dst, max);
  }
  int64_t raw_bytes_done() const override { return rest_->raw_bytes_done(); }

 private:
  std::string prefix_;
  size_t pos_ = 0;
  std::unique_ptr<ByteSource> rest_;
};

bool IsGzip(std::string_view head) {
  return head.size() >= 2 && static_cast<unsigned char>(head[0]) == 0x1f &&
         static_cast<unsigned char>(head[1]) == 0x8b;
}

}  // namespace

int64_t DecodedRest::end() const {
  int64_t n = offset - static_cast<int64_t>(first_skip);
  for (const auto& c : chunks) n += static_cast<int64_t>(c->size);
  return n;
}

std::string DecodedRest::Copy(int64_t from, size_t n) const {
  std::string out;
  RestSource src(*this, from);
  out.resize(n);
  size_t got = *src.Read(out.data(), n);
  out.resize(got);
  return out;
}

std::unique_ptr<ByteSource> RestBytes(DecodedRest rest, int64_t from) {
  return std::make_unique<RestSource>(std::move(rest), from);
}

StatusOr<std::unique_ptr<ByteSource>> OpenTraceBytes(const std::string& path, size_t ahead_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NotFound(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  auto file = std::make_unique<FileSource>(fd, path);
  char head[2] = {0, 0};
  size_t got = 0;
  while (got < 2) {
    TRAINPROF_ASSIGN_OR_RETURN(size_t n, file->Read(head + got, 2 - got));
    if (n == 0) break;
    got += n;
  }
  std::string_view magic(head, got);
  auto raw = std::make_unique<PrefixedSource>(std::string(magic), std::move(file));
  if (!IsGzip(magic)) return std::unique_ptr<ByteSource>(std::move(raw));
  return std::unique_ptr<ByteSource>(std::make_unique<ReadAheadSource>(
      std::make_unique<GzipSource>(std::move(raw), path), ahead_bytes));
}

StatusOr<std::unique_ptr<ByteSource>> OpenFileAt(const std::string& path, int64_t offset) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NotFound(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  auto file = std::make_unique<FileSource>(fd, path);
  if (::lseek(fd, offset, SEEK_SET) != offset)
    return InvalidArgument(
        fmt::format("{}: cannot seek to byte {}: {}", path, offset, std::strerror(errno)));
  return std::unique_ptr<ByteSource>(std::move(file));
}

std::unique_ptr<ByteSource> MemoryTraceBytes(std::string_view s, const std::string& name) {
  auto raw = std::make_unique<MemorySource>(s);
  if (!IsGzip(s)) return raw;
  return std::make_unique<GzipSource>(std::move(raw), name);
}

bool InflatesWithIsal() { return TRAINPROF_HAVE_ISAL != 0; }

}  // namespace trainprof::trace
