// A big gzip trace read on several threads, inflated once. One thread inflates the file from its
// start and cuts the decoded stream into parts of about ReadOptions::min_segment_bytes / 8 at
// guessed event boundaries; the parser threads take the parts in turn, each part's parser
// working in the part's own buffer (no copy), and the parts' models are taken into the first
// one in order as soon as they are done, so memory holds a few parts, not the file. The same
// checks as for a plain file keep the result the sequential reader's: the first part must pause
// exactly at its end between two events, each later part must end exactly at its end (the last
// at the document's end); a guess inside a string, a part that does not find a boundary within
// four times its size, a cut or corrupt stream, or any error makes the file be read again by one
// parser from its start, so the model and any error (with its line and column) are that
// parser's.
#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "trace/kineto/kineto_parser.h"
#include "trace/kineto/kineto_parts.h"

namespace trainprof::trace {
namespace {

// One part of the decoded stream: `size` bytes of `bytes` (which has room after them), at
// decoded offset `at`; `raw_done` is the file's bytes consumed when it was cut (progress).
struct InflatedPart {
  RawBuffer bytes{0};
  size_t size = 0;
  int64_t at = 0, raw_done = 0;
  bool last = false;
};

// Inflates a gzip stream on its own thread into parts cut at event boundaries, a few ahead of
// the parsers at most.
class PartCutter {
 public:
  PartCutter(std::unique_ptr<ByteSource> src, size_t part_bytes)
      : src_(std::move(src)),
        part_(part_bytes),
        step_(std::min<size_t>(part_bytes, size_t{1} << 20)),
        limit_(4 * part_bytes) {
    thread_ = std::thread([this] { Run(); });
  }
  ~PartCutter() {
    Stop();
    thread_.join();
  }
  // The next part in order; false when there is none (the end, or the cutter failed).
  bool Next(InflatedPart* out, size_t* index) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !ready_.empty() || ended_ || stop_; });
    if (ready_.empty() || stop_) return false;
    *out = std::move(ready_.front());
    ready_.pop_front();
    *index = taken_++;
    cv_.notify_all();
    return true;
  }
  // A part's buffer, once parsed, for a later part: fresh pages for every part cost as much
  // as the inflating (the kernel clears each one).
  void GiveBack(RawBuffer b) {
    std::lock_guard<std::mutex> lock(mu_);
    if (b.size() >= part_ + step_ + 1 && spare_.size() < 4) spare_.push_back(std::move(b));
  }
  // Stops inflating (a part failed: the file is read again from its start).
  void Stop() {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    cv_.notify_all();
  }
  // After Next() returned false: whether every part was cut (none failed to).
  bool failed() {
    std::lock_guard<std::mutex> lock(mu_);
    return failed_;
  }
  bool bare_array() const { return bare_; }

 private:
  static constexpr size_t kAhead = 1;        // parts cut and not yet taken
  static constexpr size_t kLook = 16 << 10;  // bytes read at a time to find a cut
  bool long_ = false;                        // Fill's own (the cutting thread's)

  // Reads up to `want` more bytes into `b` after its first *n (growing it); false at the end.
  bool Fill(RawBuffer& b, size_t* n, size_t want) {
    if (b.size() - *n < want + 1) b.Grow(*n + want + part_, *n);
    // A stream that filled a read whole is long: the next reads will be filled whole too.
    if (long_) b.Populate(*n, *n + want);
    StatusOr<size_t> got = src_->Read(b.data() + *n, want);
    if (!got.ok()) {
      error_ = true;
      return false;
    }
    long_ = long_ || *got == want;
    *n += *got;
    return *got > 0;
  }

  // Where the first part's events may be cut: after "traceEvents" (Kineto writes other arrays
  // of objects before it), or anywhere in a bare array. npos: not seen yet.
  size_t EventsStart(std::string_view head) {
    const size_t lead = head.find_first_not_of(" \t\r\n");
    if (lead == std::string_view::npos) return std::string_view::npos;
    bare_ = head[lead] == '[';
    if (bare_) return lead;
    const size_t key = head.find("\"traceEvents\"");
    return key == std::string_view::npos ? std::string_view::npos : key;
  }

  // A buffer for a part, with room for `n` bytes at least: a spare one when there is one.
  RawBuffer Buffer(size_t n) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!spare_.empty() && spare_.back().size() >= n) {
        RawBuffer b = std::move(spare_.back());
        spare_.pop_back();
        return b;
      }
    }
    return RawBuffer(std::max(part_ + step_ + 1, n));
  }

  bool Publish(InflatedPart p) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return ready_.size() < kAhead || stop_; });
    if (stop_) return false;
    ready_.push_back(std::move(p));
    cv_.notify_all();
    return true;
  }

  void Finish(bool failed) {
    std::lock_guard<std::mutex> lock(mu_);
    failed_ = failed;
    ended_ = true;
    cv_.notify_all();
  }

  void Run() {
    RawBuffer buf(part_ + step_ + 1);
    size_t n = 0;
    int64_t at = 0;
    bool first = true, more = true;
    for (;;) {
      while (more && n < part_) more = Fill(buf, &n, std::min(step_, part_ - n));
      if (!more) {  // the rest is the last part
        if (error_ || src_->cut_short() || n == 0) return Finish(true);
        if (n == buf.size()) buf.Grow(n + 1, n);
        InflatedPart p{std::move(buf), n, at, src_->raw_bytes_done(), true};
        return Finish(!Publish(std::move(p)));
      }
      size_t from = first ? std::string_view::npos : part_;
      size_t cut = std::string_view::npos;
      for (size_t look = part_;;) {
        if (first && from == std::string_view::npos) from = EventsStart({buf.data(), n});
        if (from != std::string_view::npos) {
          const size_t lo = std::max(from, look > 16 ? look - 16 : 0);
          if (lo < n) {
            const size_t b = EventBoundaryIn({buf.data() + lo, n - lo});
            if (b != std::string_view::npos) {
              cut = lo + b;
              break;
            }
          }
          look = n;
        }
        // A little at a time: the bytes after the cut are copied to the next part.
        if (n >= limit_ || !(more = Fill(buf, &n, kLook))) break;
      }
      if (cut == std::string_view::npos) {
        if (more || error_ || src_->cut_short()) return Finish(true);  // no boundary in reach
        if (n == buf.size()) buf.Grow(n + 1, n);
        InflatedPart p{std::move(buf), n, at, src_->raw_bytes_done(), true};
        return Finish(!Publish(std::move(p)));
      }
      // The bytes after the cut (a few KiB) wait aside, so that the next part's buffer can be
      // one that a parser gave back meanwhile.
      std::string rest(buf.data() + cut, n - cut);
      InflatedPart p{std::move(buf), cut, at, src_->raw_bytes_done(), false};
      if (!Publish(std::move(p))) return Finish(true);
      buf = Buffer(rest.size() + step_ + 1);
      std::memcpy(buf.data(), rest.data(), rest.size());
      n = rest.size();
      at += static_cast<int64_t>(cut);
      first = false;
    }
  }

  std::unique_ptr<ByteSource> src_;
  const size_t part_, step_, limit_;
  bool bare_ = false, error_ = false;  // set before the first part is published
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<InflatedPart> ready_;
  std::vector<RawBuffer> spare_;
  size_t taken_ = 0;
  bool ended_ = false, stop_ = false, failed_ = false;
  std::thread thread_;
};

// The parsers' side: parts parsed by `threads` threads, taken into the first part's parser in
// order.
class PartReader {
 public:
  // `stated`: the decoded size the gzip trailer states (a hint).
  PartReader(const std::string& path, const ReadOptions& opt, PartCutter* cutter, int64_t stated)
      : path_(path),
        opt_(opt),
        stated_(stated),
        cutter_(cutter),
        empty_(MemoryTraceBytes({}, path)) {
    quiet_ = opt;
    quiet_.progress = nullptr;
    quiet_.chunk_bytes = json::kMinWindowBytes;  // the window is the part's own buffer
  }

  // Parses parts until there are none, or one failed (then the cutter is stopped).
  void Work() {
    InflatedPart p;
    size_t k = 0;
    while (!failed() && cutter_->Next(&p, &k)) {
      auto parser = std::make_unique<KinetoParser>(empty_.get(), path_, quiet_);
      // The first part's columns take in all the others: room for the whole file.
      parser->ReserveForBytes(k == 0 ? stated_ : static_cast<int64_t>(p.size));
      if (k > 0) parser->StartInEvents(cutter_->bare_array(), p.last ? -1 : p.size);
      if (k == 0 && !p.last) parser->set_stop(static_cast<int64_t>(p.size));
      Status st = parser->StartInMemory(std::move(p.bytes), p.size);
      if (st.ok()) st = parser->Drive();
      const bool right = st.ok() && (p.last ? parser->ended() : parser->paused());
      // The first part's parser keeps its window only when it is the whole file.
      if (k > 0 || (right && !p.last)) cutter_->GiveBack(parser->ReleaseWindow());
      if (!right) {
        Fail();
        return;
      }
      Done(k, std::move(parser), p);
    }
  }

  bool failed() {
    std::lock_guard<std::mutex> lock(mu_);
    return failed_;
  }
  // After Work() on every thread: the model, unless a part failed (nullptr).
  KinetoParser* first() { return first_.get(); }
  bool complete() const { return saw_last_ && pending_.empty(); }
  int parts() const { return static_cast<int>(absorbed_); }

 private:
  struct Parsed {
    std::unique_ptr<KinetoParser> parser;
    int64_t at = 0, raw_done = 0;
    bool last = false;
  };

  void Fail() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      failed_ = true;
    }
    cutter_->Stop();
  }

  // Takes part k in, with every part before it that is done.
  void Done(size_t k, std::unique_ptr<KinetoParser> parser, const InflatedPart& p) {
    std::lock_guard<std::mutex> lock(mu_);
    pending_[k] = Parsed{std::move(parser), p.at, p.raw_done, p.last};
    for (auto it = pending_.find(absorbed_); it != pending_.end(); it = pending_.find(absorbed_)) {
      Parsed& d = it->second;
      if (absorbed_ == 0)
        first_ = std::move(d.parser);
      else
        first_->AbsorbSegment(*d.parser, d.at);
      saw_last_ = saw_last_ || d.last;
      if (opt_.progress) opt_.progress(d.raw_done);
      pending_.erase(it);
      ++absorbed_;
    }
  }

  const std::string& path_;
  const ReadOptions& opt_;
  const int64_t stated_;
  ReadOptions quiet_;
  PartCutter* cutter_;
  std::unique_ptr<ByteSource> empty_;  // the parsers' source, never read
  std::mutex mu_;
  bool failed_ = false, saw_last_ = false;
  std::map<size_t, Parsed> pending_;
  size_t absorbed_ = 0;
  std::unique_ptr<KinetoParser> first_;
};

}  // namespace

// 1 MiB parts by default. The cutter, the part waiting and the two being parsed each hold a
// buffer of a part and a read step, and every buffer is fresh memory, which on a VM costs
// about 3 ms a MiB right after another process (the kernel clears each page the hypervisor
// hands back): 2 MiB parts held 6 MB more of it, and a 33 MB trace read after a 220 MB
// process took 120 ms against 106 (bench/fresh_memory_ab.sh, 24 rounds). A 1 GB trace reads
// as fast.
constexpr int64_t kPartsPerSegment = 8;

StatusOr<TraceModel> ReadGzipInParts(std::unique_ptr<ByteSource> src, const std::string& path,
                                     const ReadOptions& opt) {
  const int64_t stated = GzipStatedSize(path);
  if (opt.threads < 2 || stated < 2 * opt.min_segment_bytes) {
    src = ReadAhead(std::move(src));
    return ParseFrom(src.get(), path, opt);
  }
  {
    PartCutter cutter(std::move(src),
                      static_cast<size_t>(std::max<int64_t>(
                          opt.min_segment_bytes / kPartsPerSegment, json::kMinWindowBytes)));
    PartReader reader(path, opt, &cutter, stated);
    std::vector<std::thread> threads;
    for (int t = 1; t < opt.threads; ++t) threads.emplace_back([&] { reader.Work(); });
    reader.Work();
    for (std::thread& t : threads) t.join();
    if (!reader.failed() && !cutter.failed() && reader.complete()) {
      reader.first()->set_read_segments(reader.parts());
      return reader.first()->Finish();
    }
  }
  // Not cut cleanly: one parser from the start, inflating on its own thread again.
  TRAINPROF_ASSIGN_OR_RETURN(std::unique_ptr<ByteSource> again, OpenTraceBytes(path));
  return ParseFrom(again.get(), path, opt);
}

}  // namespace trainprof::trace
