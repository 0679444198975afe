#include "trace/kineto/kineto_parts.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "trace/kineto/kineto_parser.h"

namespace trainprof::trace {
namespace {

// --- Reading a big plain file in parts, on several threads ---------------------------------
//
// The event list is cut at guessed event boundaries ("}", ",", "{" with white space between),
// each part parsed by its own KinetoParser, and the parts' models appended in order. A guess inside
// a string is caught: the parser before it must pause exactly there between two events, and each
// part must end exactly at the next guess. Otherwise the first parser reads on alone, so the
// result (and any error, with its line and column) is always the sequential reader's.

// Bytes of the file at `offset`, up to `n`.
std::string ReadAt(const std::string& path, int64_t offset, size_t n) {
  auto src = OpenFileAt(path, offset);
  std::string out(n, '\0');
  size_t got = 0;
  while (src.ok() && got < n) {
    auto r = (*src)->Read(out.data() + got, n - got);
    if (!r.ok() || *r == 0) break;
    got += *r;
  }
  out.resize(got);
  return out;
}

// The offset just after a ',' that sits between "}" and "{" at or after `from`, or -1. Most
// guesses are found in the first 64 KiB; a megabyte is read only when not.
int64_t GuessEventBoundary(const std::string& path, int64_t from) {
  for (size_t look : {size_t{64} << 10, size_t{1} << 20}) {
    size_t at = EventBoundaryIn(ReadAt(path, from, look));
    if (at != std::string_view::npos) return from + static_cast<int64_t>(at);
  }
  return -1;
}

// After the parts ran: `first` paused at the first boundary and every later part (each starting
// at its decoded offset) `ended` where it should, so the parts join into one model; otherwise
// the first parser reads on alone, so the model and any error are the sequential reader's.
StatusOr<TraceModel> JoinParts(KinetoParser& first, bool ended,
                               const std::vector<std::pair<KinetoParser*, int64_t>>& parts) {
  if (first.paused() && ended) {
    std::vector<const TraceModel*> models;
    for (const auto& [part, at] : parts) models.push_back(&part->model());
    first.model().ReserveFor(models);
    for (const auto& [part, at] : parts) first.AbsorbSegment(*part, at);
    first.set_read_segments(static_cast<int>(parts.size() + 1));
  } else if (first.paused()) {
    first.set_stop(-1);  // a guess or a part failed
    TRAINPROF_RETURN_IF_ERROR(first.Drive());
  }
  return first.Finish();
}

// One part after the first, read on its own thread: its own source (stopping at the part's
// end) and parser.
struct Part {
  int64_t at = 0, stop = -1;  // decoded offset of its start; its length, or -1 for the last
  std::unique_ptr<ByteSource> src;
  std::unique_ptr<KinetoParser> parser;
  Status status = Status::Ok();

  // `size`: the file's, in bytes.
  void Read(const std::string& path, ReadOptions opt, bool bare_array, int64_t size) {
    auto opened = OpenFileAt(path, at, stop);
    if (!opened.ok()) {
      status = opened.status();
      return;
    }
    src = std::move(*opened);
    parser = std::make_unique<KinetoParser>(src.get(), path, opt);
    parser->ReserveForBytes(stop >= 0 ? stop : size - at);
    parser->StartInEvents(bare_array, stop);
    status = parser->Start();
    if (status.ok()) status = parser->Drive();
    parser->ReleaseWindow();
  }
  bool done_right() const {
    return status.ok() && (stop >= 0 ? parser->paused() : parser->ended());
  }
};

}  // namespace

// The offset in `b` just after a ',' that sits between "}" and "{", or npos.
size_t EventBoundaryIn(std::string_view b) {
  auto ws = [](char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; };
  for (size_t i = b.find(','); i != std::string_view::npos; i = b.find(',', i + 1)) {
    size_t l = i, r = i + 1;
    while (l > 0 && ws(b[l - 1])) --l;
    while (r < b.size() && ws(b[r])) ++r;
    if (l > 0 && b[l - 1] == '}' && r < b.size() && b[r] == '{') return i + 1;
  }
  return std::string_view::npos;
}

// Starts of the parts after the first, ascending: the first event boundary after each k/n of
// the file, for n parts of at least min_segment_bytes, one a thread.
std::vector<int64_t> GuessPartStarts(const std::string& path, int64_t size,
                                     const ReadOptions& opt) {
  const int parts = static_cast<int>(
      std::min<int64_t>(opt.threads, size / std::max<int64_t>(1, opt.min_segment_bytes)));
  std::vector<int64_t> starts;
  for (int k = 1; k < parts; ++k) {
    int64_t b = GuessEventBoundary(path, size * k / parts);
    if (b > 0 && (starts.empty() || b > starts.back())) starts.push_back(b);
  }
  return starts;
}

StatusOr<TraceModel> ReadInParts(std::unique_ptr<ByteSource> first_src, const std::string& path,
                                 const ReadOptions& opt, const std::vector<int64_t>& starts) {
  std::error_code ec;
  const auto size = static_cast<int64_t>(std::filesystem::file_size(path, ec));
  std::string head = ReadAt(path, 0, 4096);
  size_t lead = head.find_first_not_of(" \t\r\n");
  const bool bare = lead != std::string::npos && head[lead] == '[';
  const size_t n = starts.size();
  std::mutex progress_mu;
  std::vector<int64_t> done(n + 1, 0);
  auto options_of = [&](size_t k) {
    ReadOptions o = opt;
    if (opt.progress)
      o.progress = [&, k](int64_t bytes) {
        std::lock_guard<std::mutex> lock(progress_mu);
        done[k] = bytes;
        int64_t sum = 0;
        for (int64_t d : done) sum += d;
        opt.progress(sum);
      };
    return o;
  };
  std::vector<Part> parts(n);
  std::vector<std::thread> threads;
  for (size_t k = 0; k < n; ++k) {
    parts[k].at = starts[k], parts[k].stop = k + 1 < n ? starts[k + 1] - starts[k] : -1;
    threads.emplace_back([&, k] { parts[k].Read(path, options_of(k + 1), bare, size); });
  }
  KinetoParser first(first_src.get(), path, options_of(0));
  if (!ec) first.ReserveForBytes(size);  // the whole file: the parts are appended in its columns
  first.set_stop(starts[0]);
  Status st = first.Start();
  if (st.ok()) st = first.Drive();
  for (std::thread& t : threads) t.join();
  TRAINPROF_RETURN_IF_ERROR(st);
  bool ended = true;
  std::vector<std::pair<KinetoParser*, int64_t>> joined;
  for (Part& p : parts) {
    ended = ended && p.done_right();
    joined.emplace_back(p.parser.get(), p.at);
  }
  return JoinParts(first, ended, joined);
}

}  // namespace trainprof::trace
