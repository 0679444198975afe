#include "trace/byte_source.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
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
#include <utility>
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
  // `limit`: bytes to read at most, or -1 for all. `done`: bytes of it read already.
  FileSource(int fd, std::string path, int64_t limit = -1, int64_t done = 0)
      : fd_(fd), path_(std::move(path)), limit_(limit), done_(done) {}
  ~FileSource() override { ::close(fd_); }
  StatusOr<size_t> Read(char* dst, size_t max) override {
    if (limit_ >= 0) max = static_cast<size_t>(std::min<int64_t>(limit_ - done_, max));
    if (max == 0) return size_t{0};
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
  int64_t limit_;
  int64_t done_;
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

void RawBuffer::Grow(size_t n, size_t keep) {
  std::unique_ptr<char[]> d(new char[n]);
  std::memcpy(d.get(), data_.get(), std::min(keep, n));
  data_ = std::move(d);
  size_ = n;
}

void RawBuffer::Populate(size_t from, size_t to) const {
#ifdef MADV_POPULATE_WRITE
  static const auto kPage = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  constexpr size_t kLarge = size_t{1} << 20;
  to = std::min(to, size_);
  if (to < from + kLarge) return;
  const auto at = reinterpret_cast<uintptr_t>(data_.get());
  const uintptr_t begin = (at + from + kPage - 1) & ~(kPage - 1), end = (at + to) & ~(kPage - 1);
  if (end > begin)  // an old kernel says EINVAL: the pages come one fault at a time as before
    madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE);
#else
  (void)from, (void)to;
#endif
}

namespace {

class GzipSource : public ByteSource {
 public:
  GzipSource(std::unique_ptr<ByteSource> raw, std::string path)
      : raw_(std::move(raw)), path_(std::move(path)), z_(NewInflater()) {}
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
  // The compressed bytes, 64 KiB at a time, in a buffer not zeroed: each of its pages is fresh
  // memory (about 10 us on a VM), and a zero-filled 256 KiB vector was 64 of the 700 page
  // faults of analysing a 33 MB trace, and 2.5 GB of zeroing for 10,000 rank files.
  RawBuffer in_{size_t{64} << 10};
  bool done_ = false, in_member_ = false, cut_short_ = false;
};

// Reads another source ahead on its own thread, a few chunks deep, so that the caller's work
// (parsing) and the source's (inflating) run at the same time.
class ReadAheadSource : public ByteSource {
 public:
  explicit ReadAheadSource(std::unique_ptr<ByteSource> inner) : inner_(std::move(inner)) {
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
      cv_.wait(lock, [&] { return filled_ > 0 || ended_; });
      if (filled_ == 0) {
        if (!status_.ok() && total == 0) return status_;
        break;
      }
      Chunk& c = chunks_[head_];
      lock.unlock();
      size_t n = std::min(max - total, c.size - c.used);
      std::memcpy(dst + total, c.data.data() + c.used, n);
      c.used += n;
      total += n;
      if (c.used == c.size) {
        lock.lock();
        head_ = (head_ + 1) % kChunks;
        --filled_;
        cv_.notify_all();
      }
    }
    return total;
  }
  int64_t raw_bytes_done() const override { return raw_done_.load(std::memory_order_relaxed); }
  bool cut_short() const override { return inner_->cut_short(); }
  const char* decoder() const override { return inner_->decoder(); }

 private:
  static constexpr size_t kChunks = 4;
  static constexpr size_t kChunkBytes = size_t{1} << 20;
  struct Chunk {
    RawBuffer data{kChunkBytes};
    size_t size = 0, used = 0;
    bool populated = false;
  };

  void Produce() {
    size_t tail = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return filled_ < kChunks || stop_; });
        if (stop_) return;
      }
      Chunk& c = chunks_[tail];
      // A stream that filled a chunk whole is long: the next chunks will be filled whole too.
      if (long_ && !c.populated) c.data.Populate(0, c.data.size()), c.populated = true;
      StatusOr<size_t> n = inner_->Read(c.data.data(), c.data.size());
      if (n.ok() && *n == c.data.size()) long_ = true;
      raw_done_.store(inner_->raw_bytes_done(), std::memory_order_relaxed);
      std::lock_guard<std::mutex> lock(mu_);
      if (!n.ok() || *n == 0) {
        if (!n.ok()) status_ = n.status();
        ended_ = true;
        cv_.notify_all();
        return;
      }
      c.size = *n;
      c.used = 0;
      tail = (tail + 1) % kChunks;
      ++filled_;
      cv_.notify_all();
    }
  }

  std::unique_ptr<ByteSource> inner_;
  Chunk chunks_[kChunks];
  std::mutex mu_;
  std::condition_variable cv_;
  size_t head_ = 0, filled_ = 0;
  bool ended_ = false, stop_ = false;
  bool long_ = false;  // the producer's own
  Status status_ = Status::Ok();
  std::atomic<int64_t> raw_done_{0};
  std::thread thread_;
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
  bool cut_short() const override { return rest_->cut_short(); }
  const char* decoder() const override { return rest_->decoder(); }

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

StatusOr<OpenedFile> OpenedFile::Open(const std::string& path, size_t head_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NotFound(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  OpenedFile f(path, fd);
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) f.size_ = static_cast<int64_t>(st.st_size);
  f.head_.resize(f.size_ >= 0 ? std::min<size_t>(head_bytes, f.size_) : head_bytes);
  size_t got = 0;
  while (got < f.head_.size()) {
    const ssize_t n = ::read(fd, f.head_.data() + got, f.head_.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      return InvalidArgument(fmt::format("{}: cannot read: {}", path, std::strerror(errno)));
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  f.head_.resize(got);
  return f;
}

OpenedFile::OpenedFile(OpenedFile&& o) noexcept
    : path_(std::move(o.path_)), fd_(o.fd_), size_(o.size_), head_(std::move(o.head_)) {
  o.fd_ = -1;
}

OpenedFile::~OpenedFile() {
  if (fd_ >= 0) ::close(fd_);
}

int OpenedFile::TakeFd() { return std::exchange(fd_, -1); }

StatusOr<std::unique_ptr<ByteSource>> OpenTraceBytes(const std::string& path, bool inflate_ahead) {
  TRAINPROF_ASSIGN_OR_RETURN(OpenedFile file, OpenedFile::Open(path, 2));
  return OpenTraceBytes(std::move(file), inflate_ahead);
}

StatusOr<std::unique_ptr<ByteSource>> OpenTraceBytes(OpenedFile f, bool inflate_ahead) {
  const std::string path = f.path();
  const auto head = static_cast<int64_t>(f.head().size());
  auto file = std::make_unique<FileSource>(f.TakeFd(), path, f.size(), head);
  const std::string magic(f.head().substr(0, 2));
  auto raw = std::make_unique<PrefixedSource>(std::string(f.head()), std::move(file));
  if (!IsGzip(magic)) return std::unique_ptr<ByteSource>(std::move(raw));
  if (!inflate_ahead)
    return std::unique_ptr<ByteSource>(std::make_unique<GzipSource>(std::move(raw), path));
  return std::unique_ptr<ByteSource>(
      std::make_unique<ReadAheadSource>(std::make_unique<GzipSource>(std::move(raw), path)));
}

StatusOr<std::unique_ptr<ByteSource>> OpenFileAt(const std::string& path, int64_t offset,
                                                 int64_t length) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NotFound(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  auto file = std::make_unique<FileSource>(fd, path, length);
  if (::lseek(fd, offset, SEEK_SET) != offset)
    return InvalidArgument(
        fmt::format("{}: cannot seek to byte {}: {}", path, offset, std::strerror(errno)));
  return std::unique_ptr<ByteSource>(std::move(file));
}

int64_t GzipStatedSize(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  unsigned char b[4];
  const off_t end = ::lseek(fd, 0, SEEK_END);
  const bool ok = end >= 18 && ::pread(fd, b, 4, end - 4) == 4;
  ::close(fd);
  if (!ok) return -1;
  return static_cast<int64_t>(b[0] | b[1] << 8 | b[2] << 16 | static_cast<uint32_t>(b[3]) << 24);
}

std::unique_ptr<ByteSource> ReadAhead(std::unique_ptr<ByteSource> inner) {
  return std::make_unique<ReadAheadSource>(std::move(inner));
}

std::unique_ptr<ByteSource> PrefixBytes(std::string prefix, std::unique_ptr<ByteSource> rest) {
  return std::make_unique<PrefixedSource>(std::move(prefix), std::move(rest));
}

StatusOr<int64_t> SkipBytes(ByteSource* src, int64_t n, std::string* first) {
  RawBuffer buf(size_t{256} << 10);
  int64_t done = 0;
  while (done < n) {
    const size_t want = static_cast<size_t>(std::min<int64_t>(n - done, buf.size()));
    TRAINPROF_ASSIGN_OR_RETURN(size_t got, src->Read(buf.data(), want));
    if (got == 0) break;
    done += static_cast<int64_t>(got);
    if (first != nullptr && done == static_cast<int64_t>(got)) first->assign(buf.data(), got);
  }
  return done;
}

std::unique_ptr<ByteSource> MemoryTraceBytes(std::string_view s, const std::string& name) {
  auto raw = std::make_unique<MemorySource>(s);
  if (!IsGzip(s)) return raw;
  return std::make_unique<GzipSource>(std::move(raw), name);
}

bool InflatesWithIsal() { return TRAINPROF_HAVE_ISAL != 0; }

}  // namespace trainprof::trace
