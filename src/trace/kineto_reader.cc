// The reader walks the JSON one "unit" at a time (an event, or one top-level member) over a
// window of decoded bytes (json_scanner.h). When a unit runs past the window, the window is
// refilled and the unit scanned again; nothing is committed until a unit scanned whole, so a cut
// file keeps every complete event before the cut. A unit larger than ReadOptions::max_unit_bytes
// is streamed past and counted, so one giant string cannot take the memory. What the fields mean
// is kineto_builder.cc's business.
#include "trace/kineto_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "trace/byte_source.h"
#include "trace/json_scanner.h"
#include "trace/kineto_builder.h"

namespace trainprof::trace {
namespace {

using json::R;
using json::Scalar;

class Parser {
 public:
  Parser(ByteSource* src, std::string name, const ReadOptions& opt)
      : src_(src),
        name_(std::move(name)),
        opt_(opt),
        w_(src, opt.chunk_bytes, opt.max_unit_bytes),
        b_(name_) {}
  Parser(const Parser&) = delete;  // touched_ points into ev_
  Parser& operator=(const Parser&) = delete;

  StatusOr<TraceModel> Run();

  // Reading in parts (ReadInParts): this parser starts at an event boundary inside the event
  // list, and must end at `stop_at` (relative to its start) or, for the last, at the end.
  void StartInEvents(bool bare_array, int64_t stop_at);
  // The first segment pauses at the event boundary `stop_at`; -1: none.
  void set_stop(int64_t stop_at) { stop_at_ = stop_at; }
  // The same, with the boundary set by another thread while this one parses (-1 until then).
  void set_shared_stop(const std::atomic<int64_t>* stop_at) { shared_stop_ = stop_at; }
  Status Start();
  // Steps until the document ends, or until paused at the stop. A segment that cannot end
  // cleanly there fails, so that the first parser reads its bytes instead.
  Status Drive();
  bool paused() const { return paused_; }
  void set_read_segments(int n) { b_.model().read_segments = n; }
  TraceModel& model() { return b_.model(); }
  bool ended() const { return state_ == State::kEnd; }
  // A part done reading frees its window at once, keeping where the window ended.
  void ReleaseWindow() {
    window_end_ = w_.end_offset();
    w_.Release();
  }
  // Takes in a later part that started at decoded offset `at`, ended where it should and
  // released its window.
  void AbsorbSegment(Parser& seg, int64_t at);
  StatusOr<TraceModel> Finish();

 private:
  enum class State {
    kStart,
    kTopKeyFirst,
    kTopKey,
    kTopSep,
    kEventsFirst,
    kEvent,
    kEventSep,
    kAfterEvents,
    kEnd
  };

  R Step();
  R StepStart(const char*& p, const char* e);
  R StepTopKey(const char*& p, const char* e, bool first);
  R StepEvent(const char*& p, const char* e);
  R StepEventSep(const char*& p, const char* e);
  R StepAfterEvents(const char*& p, const char* e);
  R EventMember(std::string_view key, const char*& p, const char* e, RawEvent* ev);
  json::Scalar* Touch(json::Scalar* field) {
    if (touched_n_ < kMaxTouched) touched_[touched_n_] = field;
    ++touched_n_;
    return field;
  }
  void ClearEvent();
  Status Refill();
  Status SkipOversized();
  Status CutShort();
  Status Error(const char* at, const std::string& what) const;
  void NoteOddStrings(const json::Scanner::Counts& before);
  void AddStringDiagnostics(TraceModel& m) const;

  ByteSource* src_;
  std::string name_;
  ReadOptions opt_;
  json::Window w_;
  json::Scanner s_;
  EventBuilder b_;

  State state_ = State::kStart;
  bool bare_array_ = false;
  bool saw_events_ = false;
  bool too_large_ = false;
  int64_t oversized_ = 0;
  int64_t oversized_at_ = 0;
  int64_t first_control_at_ = 0, first_malformed_at_ = 0;
  int64_t stop_at_ = -1;
  const std::atomic<int64_t>* shared_stop_ = nullptr;
  bool paused_ = false;
  bool segment_ = false;
  int64_t absorbed_end_ = 0;  // decoded end of the last part taken in
  int64_t window_end_ = 0;    // decoded end of the window when released
  std::string s_ph_, s_cat_, s_name_, s_pid_, s_tid_, s_id_, s_tmp_;
  // The event being read, and the fields of it that were set (more than kMaxTouched: all).
  static constexpr int kMaxTouched = 48;
  RawEvent ev_;
  json::Scalar* touched_[kMaxTouched];
  int touched_n_ = 0;
};

// Only the fields the last event (or the last try at this one) set go back to none: zeroing all
// 36 of a RawEvent (872 bytes) for every event was 1.5 % of reading a trace.
void Parser::ClearEvent() {
  if (touched_n_ > kMaxTouched) {
    ev_ = RawEvent{};
  } else {
    for (int i = 0; i < touched_n_; ++i) *touched_[i] = Scalar{};
    ev_.has_args = false;
  }
  touched_n_ = 0;
}

Status Parser::Error(const char* at, const std::string& what) const {
  return InvalidArgument(fmt::format("{}: {}: {}", name_, w_.Where(w_.OffsetOf(at)), what));
}

Status Parser::Refill() {
  TRAINPROF_RETURN_IF_ERROR(w_.Refill(&too_large_));
  if (opt_.progress) opt_.progress(src_->raw_bytes_done());
  return Status::Ok();
}

R Parser::EventMember(std::string_view key, const char*& p, const char* e, RawEvent* ev) {
  Scalar* target = nullptr;
  std::string* scratch = &s_tmp_;
  if (key.size() == 2) {
    if (json::KeyIs(key, "ph"))
      target = &ev->ph, scratch = &s_ph_;
    else if (json::KeyIs(key, "ts"))
      target = &ev->ts;
    else if (json::KeyIs(key, "id"))
      target = &ev->id, scratch = &s_id_;
  } else if (json::KeyIs(key, "name")) {
    target = &ev->name, scratch = &s_name_;
  } else if (json::KeyIs(key, "cat")) {
    target = &ev->cat, scratch = &s_cat_;
  } else if (json::KeyIs(key, "pid")) {
    target = &ev->pid, scratch = &s_pid_;
  } else if (json::KeyIs(key, "tid")) {
    target = &ev->tid, scratch = &s_tid_;
  } else if (json::KeyIs(key, "dur")) {
    target = &ev->dur;
  } else if (json::KeyIs(key, "args") && *p == '{') {
    ev->has_args = true;
    return s_.Members(p, e, "", [&](std::string_view k, const char*& q, const char* qe) {
      Scalar unused;
      Scalar* t = ArgTarget(k, ev);
      return s_.ValueAt(q, qe, t ? Touch(t) : &unused, &s_tmp_, 2);
    });
  }
  Scalar unused;
  return s_.ValueAt(p, e, target ? Touch(target) : &unused, scratch, 1);
}

R Parser::StepEvent(const char*& p, const char* e) {
  TRAINPROF_JSON_TRY(s_.Ws(p, e));
  if (*p != '{') return s_.Fail(p, "expected an event object in traceEvents");
  ClearEvent();
  TRAINPROF_JSON_TRY(
      s_.Members(p, e, " in an event", [&](std::string_view key, const char*& q, const char* qe) {
        return EventMember(key, q, qe, &ev_);
      }));
  // The separator after the event belongs to this unit.
  TRAINPROF_JSON_TRY(StepEventSep(p, e));
  b_.Add(ev_);
  return R::kOk;
}

R Parser::StepEventSep(const char*& p, const char* e) {
  TRAINPROF_JSON_TRY(s_.Ws(p, e));
  if (*p == ',') {
    state_ = State::kEvent;
  } else if (*p == ']') {
    state_ = State::kAfterEvents;
  } else {
    return s_.Fail(p, "expected ',' or ']' after an event");
  }
  ++p;
  return R::kOk;
}

R Parser::StepTopKey(const char*& p, const char* e, bool first) {
  TRAINPROF_JSON_TRY(s_.Ws(p, e));
  if (first && *p == '}') {
    ++p;
    state_ = State::kEnd;
    return R::kOk;
  }
  if (*p != '"') return s_.Fail(p, "expected a key string");
  std::string_view key;
  TRAINPROF_JSON_TRY(s_.String(p, e, &key, &s_name_));
  TRAINPROF_JSON_TRY(s_.Expect(p, e, ':', "':' after a key"));
  TRAINPROF_JSON_TRY(s_.Ws(p, e));
  if (key == "traceEvents") {
    if (*p != '[') return s_.Fail(p, "\"traceEvents\" is not an array");
    ++p;
    saw_events_ = true;
    state_ = State::kEventsFirst;
    return R::kOk;
  }
  Scalar v;
  TRAINPROF_JSON_TRY(s_.Value(p, e, &v, &s_tmp_, 1));
  TRAINPROF_JSON_TRY(s_.Ws(p, e));
  if (*p != ',' && *p != '}') return s_.Fail(p, "expected ',' or '}'");
  state_ = *p == '}' ? State::kEnd : State::kTopKey;
  ++p;
  b_.TopValue(key, v.text);
  return R::kOk;
}

R Parser::StepStart(const char*& p, const char* e) {
  TRAINPROF_JSON_TRY(s_.Ws(p, e));
  if (*p == '{') {
    state_ = State::kTopKeyFirst;
  } else if (*p == '[') {
    bare_array_ = true;
    saw_events_ = true;
    state_ = State::kEventsFirst;
  } else {
    return s_.Fail(p, "not JSON: a trace starts with '{' or '['");
  }
  ++p;
  return R::kOk;
}

R Parser::StepAfterEvents(const char*& p, const char* e) {
  if (bare_array_) {
    state_ = State::kEnd;
    return R::kOk;
  }
  TRAINPROF_JSON_TRY(s_.Ws(p, e));
  if (*p == ',')
    state_ = State::kTopKey;
  else if (*p == '}')
    state_ = State::kEnd;
  else
    return s_.Fail(p, "expected ',' or '}' after traceEvents");
  ++p;
  return R::kOk;
}

R Parser::Step() {
  const char* p = w_.cur();
  const char* e = w_.end();
  const json::Scanner::Counts before = s_.counts();
  R r = R::kOk;
  switch (state_) {
    case State::kStart:
      r = StepStart(p, e);
      break;
    case State::kTopKeyFirst:
    case State::kTopKey:
      r = StepTopKey(p, e, state_ == State::kTopKeyFirst);
      break;
    case State::kTopSep:  // after a top-level member that was skipped
      r = s_.Ws(p, e);
      if (r != R::kOk) break;
      if (*p != ',' && *p != '}') {
        r = s_.Fail(p, "expected ',' or '}'");
        break;
      }
      state_ = *p++ == '}' ? State::kEnd : State::kTopKey;
      break;
    case State::kEventsFirst:
      r = s_.Ws(p, e);
      if (r != R::kOk) break;
      if (*p == ']') {
        ++p;
        state_ = State::kAfterEvents;
        break;
      }
      state_ = State::kEvent;
      [[fallthrough]];
    case State::kEvent:
      r = StepEvent(p, e);
      break;
    case State::kEventSep:  // after an event that was skipped
      r = StepEventSep(p, e);
      break;
    case State::kAfterEvents:
      r = StepAfterEvents(p, e);
      break;
    case State::kEnd:
      r = s_.Ws(p, e);
      if (r == R::kOk) r = s_.Fail(p, "unexpected data after the end of the JSON document");
      break;
  }
  if (r == R::kOk) {
    w_.Consume(p);
    NoteOddStrings(before);
  } else {
    s_.set_counts(before);  // the unit will be scanned again
  }
  return r;
}

// Where the first string with a raw control character, or malformed UTF-8, was.
void Parser::NoteOddStrings(const json::Scanner::Counts& before) {
  json::Scanner::Counts now = s_.counts();
  if (now.control > 0 && before.control == 0) first_control_at_ = w_.cur_offset();
  if (now.malformed > 0 && before.malformed == 0) first_malformed_at_ = w_.cur_offset();
}

void Parser::AddStringDiagnostics(TraceModel& m) const {
  json::Scanner::Counts c = s_.counts();
  if (c.control > 0)
    m.AddDiagnostic(base::DiagnosticId::kControlCharacter, c.control,
                    fmt::format("{}: {} strings hold raw control characters (a tab, a carriage "
                                "return), which JSON does not allow; they were read as they are "
                                "(the first in the unit ending at byte {})",
                                name_, c.control, first_control_at_));
  if (c.malformed > 0)
    m.AddDiagnostic(base::DiagnosticId::kInvalidUtf8, c.malformed,
                    fmt::format("{}: {} strings hold bytes that are not UTF-8; each such byte "
                                "reads as U+FFFD (the first in the unit ending at byte {})",
                                name_, c.malformed, first_malformed_at_));
}

// The unit at the window's start fills the whole window at its largest: stream past it.
Status Parser::SkipOversized() {
  bool in_events = state_ == State::kEvent || state_ == State::kEventsFirst;
  if (oversized_++ == 0) oversized_at_ = w_.cur_offset();
  TRAINPROF_ASSIGN_OR_RETURN(bool ended, w_.SkipUnit());
  state_ = in_events ? State::kEventSep : state_ == State::kStart ? State::kEnd : State::kTopSep;
  if (!ended) state_ = in_events ? State::kEvent : State::kTopKey;  // cut inside it
  return Status::Ok();
}

// The data ended inside a unit: keep what came before, or fail when nothing did.
Status Parser::CutShort() {
  bool cut_in_events =
      state_ == State::kEvent || state_ == State::kEventsFirst || state_ == State::kEventSep;
  std::string where = w_.Where(w_.cur_offset());
  std::string why =
      src_->cut_short() ? "the compressed stream is cut short" : "the JSON is cut short";
  if (!saw_events_ || (cut_in_events && b_.events_seen() == 0 && oversized_ == 0))
    return InvalidArgument(
        fmt::format("{}: {}: {} before the first event (truncated file)", name_, where, why));
  TraceModel& m = b_.model();
  m.truncated = cut_in_events;
  m.AddDiagnostic(base::DiagnosticId::kTruncated, 1,
                  fmt::format("{}: {} at {}: kept the {} events before the cut{}", name_, why,
                              where, b_.events_seen(),
                              cut_in_events ? "" : " (the metadata after the events is lost)"));
  return Status::Ok();
}

Status Parser::Start() {
  TRAINPROF_RETURN_IF_ERROR(Refill());
  if (w_.empty())
    return InvalidArgument(fmt::format("{}: byte 0 (line 1, column 1): the file is empty", name_));
  return Status::Ok();
}

void Parser::StartInEvents(bool bare_array, int64_t stop_at) {
  state_ = State::kEvent;
  saw_events_ = true;
  bare_array_ = bare_array;
  segment_ = true;
  stop_at_ = stop_at;
}

Status Parser::Drive() {
  paused_ = false;
  for (;;) {
    R r = Step();
    if (r == R::kErr) return Error(s_.err_at() ? s_.err_at() : w_.cur(), s_.err());
    if (r == R::kOk) {
      if (shared_stop_ != nullptr && stop_at_ < 0) {
        stop_at_ = shared_stop_->load(std::memory_order_acquire);
        if (stop_at_ >= 0) shared_stop_ = nullptr;  // taken once
      }
      if (stop_at_ < 0 || w_.cur_offset() < stop_at_) continue;
      if (w_.cur_offset() == stop_at_ && state_ == State::kEvent) {
        paused_ = true;
        return Status::Ok();
      }
      if (segment_) return InternalError("the segment's end is not an event boundary");
      stop_at_ = -1;  // the guessed boundary was inside an event: read on alone
      continue;
    }
    // kMore: the unit runs past the window.
    if (too_large_) {
      TRAINPROF_RETURN_IF_ERROR(SkipOversized());
      too_large_ = false;
      continue;
    }
    if (!w_.eof()) {
      TRAINPROF_RETURN_IF_ERROR(Refill());
      continue;
    }
    if (state_ == State::kEnd) return Status::Ok();
    if (segment_) return InternalError("the segment ends inside a unit");
    if (state_ == State::kStart)
      return InvalidArgument(
          fmt::format("{}: {}: the file holds only white space", name_, w_.Where(w_.end_offset())));
    return CutShort();
  }
}

void Parser::AbsorbSegment(Parser& seg, int64_t at) {
  b_.Absorb(std::move(seg.b_));
  state_ = seg.state_;
  absorbed_end_ = at + seg.window_end_;
  if (seg.oversized_ > 0 && oversized_ == 0) oversized_at_ = at + seg.oversized_at_;
  oversized_ += seg.oversized_;
  json::Scanner::Counts mine = s_.counts(), theirs = seg.s_.counts();
  if (theirs.control > 0 && mine.control == 0) first_control_at_ = at + seg.first_control_at_;
  if (theirs.malformed > 0 && mine.malformed == 0)
    first_malformed_at_ = at + seg.first_malformed_at_;
  s_.set_counts({mine.control + theirs.control, mine.malformed + theirs.malformed});
}

StatusOr<TraceModel> Parser::Finish() {
  if (!saw_events_)
    return InvalidArgument(
        fmt::format("{}: {}: not a trace: valid JSON but no \"traceEvents\" array", name_,
                    w_.Where(w_.end_offset())));
  TraceModel& m = b_.model();
  m.json_bytes = std::max(w_.end_offset(), absorbed_end_);
  w_.Release();  // 8 MB the model's last steps can use
  AddStringDiagnostics(m);
  if (oversized_ > 0)
    m.AddDiagnostic(base::DiagnosticId::kOversizedValue, oversized_,
                    fmt::format("{}: {} value(s) larger than {} MiB were skipped without being "
                                "read (the first at byte {})",
                                name_, oversized_, opt_.max_unit_bytes >> 20, oversized_at_));
  return b_.Finish();
}

StatusOr<TraceModel> Parser::Run() {
  TRAINPROF_RETURN_IF_ERROR(Start());
  TRAINPROF_RETURN_IF_ERROR(Drive());
  return Finish();
}

StatusOr<TraceModel> ParseFrom(ByteSource* src, const std::string& name, const ReadOptions& opt) {
  return Parser(src, name, opt).Run();
}

// --- Reading a big plain file in parts, on several threads ---------------------------------
//
// The event list is cut at guessed event boundaries ("}", ",", "{" with white space between),
// each part parsed by its own Parser, and the parts' models appended in order. A guess inside a
// string is caught: the parser before it must pause exactly there between two events, and each
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

// The offset just after a ',' that sits between "}" and "{" at or after `from`, or -1. Most
// guesses are found in the first 64 KiB; a megabyte is read only when not.
int64_t GuessEventBoundary(const std::string& path, int64_t from) {
  for (size_t look : {size_t{64} << 10, size_t{1} << 20}) {
    size_t at = EventBoundaryIn(ReadAt(path, from, look));
    if (at != std::string_view::npos) return from + static_cast<int64_t>(at);
  }
  return -1;
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

// After the parts ran: `first` paused at the first boundary and every later part (each starting
// at its decoded offset) `ended` where it should, so the parts join into one model; otherwise
// the first parser reads on alone, so the model and any error are the sequential reader's.
StatusOr<TraceModel> JoinParts(Parser& first, bool ended,
                               const std::vector<std::pair<Parser*, int64_t>>& parts) {
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
  std::unique_ptr<Parser> parser;
  Status status = Status::Ok();

  void Read(const std::string& path, ReadOptions opt, bool bare_array) {
    auto opened = OpenFileAt(path, at, stop);
    if (!opened.ok()) {
      status = opened.status();
      return;
    }
    src = std::move(*opened);
    parser = std::make_unique<Parser>(src.get(), path, opt);
    parser->StartInEvents(bare_array, stop);
    status = parser->Start();
    if (status.ok()) status = parser->Drive();
    parser->ReleaseWindow();
  }
  bool done_right() const {
    return status.ok() && (stop >= 0 ? parser->paused() : parser->ended());
  }
};

StatusOr<TraceModel> ReadInParts(std::unique_ptr<ByteSource> first_src, const std::string& path,
                                 const ReadOptions& opt, const std::vector<int64_t>& starts) {
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
    threads.emplace_back([&, k] { parts[k].Read(path, options_of(k + 1), bare); });
  }
  Parser first(first_src.get(), path, options_of(0));
  first.set_stop(starts[0]);
  Status st = first.Start();
  if (st.ok()) st = first.Drive();
  for (std::thread& t : threads) t.join();
  TRAINPROF_RETURN_IF_ERROR(st);
  bool ended = true;
  std::vector<std::pair<Parser*, int64_t>> joined;
  for (Part& p : parts) {
    ended = ended && p.done_right();
    joined.emplace_back(p.parser.get(), p.at);
  }
  return JoinParts(first, ended, joined);
}

// --- A gzip file in two parts ---------------------------------------------------------------
//
// A gzip stream cannot be entered in the middle, but ISA-L inflates several times faster than
// the JSON parses, so a second thread inflates the file from its start on its own, drops the
// first half (by the size the gzip trailer states), and parses from the first event boundary
// after it to the end; the first parser learns its stop while it runs. Nothing is held in memory
// but the usual windows. The same checks as ReadInParts keep the result the sequential
// reader's: a boundary inside a string, a cut or corrupt second half, or a wrong stated size
// make the first parser read on alone.
class GzipTail {
 public:
  GzipTail(const std::string& path, const ReadOptions& opt) : path_(path), opt_(opt) {}

  void Run() {
    const bool split = Split();
    decided_.set_value();
    if (!split) return;
    status_ = parser_->Start();
    if (status_.ok()) status_ = parser_->Drive();
    parser_->ReleaseWindow();
  }
  // Blocks until Run() has set the stop or given up (ReadOptions::gzip_split_first).
  void WaitDecided() { decided_.get_future().wait(); }
  const std::atomic<int64_t>* stop() const { return &stop_; }
  // After Run(): whether the tail parsed to the document's end, and where it started.
  bool ended() const { return parser_ && status_.ok() && parser_->ended(); }
  Parser& parser() { return *parser_; }
  int64_t at() const { return at_; }

 private:
  // Inflates up to the middle, finds the boundary, makes the tail's parser and publishes the
  // head's stop; false: no split.
  bool Split() {
    const int64_t stated = GzipStatedSize(path_);
    if (stated < 2 * opt_.min_segment_bytes) return false;
    auto src = OpenTraceBytes(path_, /*inflate_ahead=*/false);  // three threads, not four
    if (!src.ok()) return false;
    std::string first;
    const int64_t mid = stated / 2;
    auto skipped = SkipBytes(src->get(), mid, &first);
    if (!skipped.ok() || *skipped < mid) return false;
    const size_t lead = first.find_first_not_of(" \t\r\n");
    if (lead == std::string::npos || (first[lead] != '{' && first[lead] != '[')) return false;
    std::string look(size_t{1} << 20, '\0');
    auto got = (*src)->Read(look.data(), look.size());
    if (!got.ok()) return false;
    look.resize(*got);
    const size_t at = EventBoundaryIn(look);
    if (at == std::string_view::npos) return false;
    at_ = mid + static_cast<int64_t>(at);
    bytes_ = PrefixBytes(look.substr(at), std::move(*src));
    ReadOptions o = opt_;
    o.progress = nullptr;
    parser_ = std::make_unique<Parser>(bytes_.get(), path_, o);
    parser_->StartInEvents(first[lead] == '[', -1);
    stop_.store(at_, std::memory_order_release);
    return true;
  }

  const std::string& path_;
  const ReadOptions& opt_;
  std::atomic<int64_t> stop_{-1};
  std::promise<void> decided_;
  int64_t at_ = -1;
  std::unique_ptr<ByteSource> bytes_;
  std::unique_ptr<Parser> parser_;
  Status status_ = Status::Ok();
};

StatusOr<TraceModel> ReadGzipInParts(std::unique_ptr<ByteSource> src, const std::string& path,
                                     const ReadOptions& opt) {
  Parser head(src.get(), path, opt);
  GzipTail tail(path, opt);
  head.set_shared_stop(tail.stop());
  std::thread t([&] { tail.Run(); });
  if (opt.gzip_split_first) tail.WaitDecided();
  Status st = head.Start();
  if (st.ok()) st = head.Drive();
  t.join();
  TRAINPROF_RETURN_IF_ERROR(st);
  if (!tail.ended()) return JoinParts(head, false, {});
  return JoinParts(head, true, {{&tail.parser(), tail.at()}});
}

}  // namespace

StatusOr<TraceModel> ReadTraceFile(const std::string& path, const ReadOptions& options) {
  const bool parts = options.threads > 1;
  TRAINPROF_ASSIGN_OR_RETURN(std::unique_ptr<ByteSource> src, OpenTraceBytes(path));
  // Only ISA-L inflates fast enough for the second part to reach the middle long before the
  // first parser does; zlib inflates at about half the parser's speed.
  if (parts && std::string_view(src->decoder()) != "plain" && InflatesWithIsal())
    return ReadGzipInParts(std::move(src), path, options);
  std::error_code ec;
  const auto size = static_cast<int64_t>(std::filesystem::file_size(path, ec));
  if (parts && !ec && size >= 2 * options.min_segment_bytes) {
    std::vector<int64_t> starts = GuessPartStarts(path, size, options);
    if (!starts.empty()) return ReadInParts(std::move(src), path, options, starts);
  }
  // A small plain file gets a window its own size: a 4 MiB buffer zeroed for each of 1,000
  // rank files of 1 MB was a quarter of the time of reading them.
  ReadOptions o = options;
  if (!ec && std::string_view(src->decoder()) == "plain")
    o.chunk_bytes = std::min(o.chunk_bytes, static_cast<size_t>(size) + 1);
  return ParseFrom(src.get(), path, o);
}

StatusOr<TraceModel> ParseTrace(std::string_view json, const std::string& name) {
  std::unique_ptr<ByteSource> src = MemoryTraceBytes(json, name);
  ReadOptions o;
  o.chunk_bytes = std::min(o.chunk_bytes, json.size() + 1);  // small inputs, small window
  return ParseFrom(src.get(), name, o);
}

int64_t RankFromFileName(std::string_view file_name) {
  for (size_t at = file_name.find("rank"); at != std::string_view::npos;
       at = file_name.find("rank", at + 1)) {
    size_t i = at + 4;
    if (i < file_name.size() && (file_name[i] == '-' || file_name[i] == '_')) ++i;
    size_t j = i;
    while (j < file_name.size() && j - i < 9 && file_name[j] >= '0' && file_name[j] <= '9') ++j;
    if (j > i) return json::ToInt(file_name.substr(i, j - i)).value_or(-1);
  }
  return -1;
}

}  // namespace trainprof::trace
