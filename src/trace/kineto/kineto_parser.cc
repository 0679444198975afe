// The parser's steps, its errors and diagnostics, and how a part read on its own joins the first.
#include "trace/kineto/kineto_parser.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace trainprof::trace {

using json::Scalar;
using json::ScanResult;

// Only the fields the last event (or the last try at this one) set go back to none: zeroing all
// 36 of a RawEvent (872 bytes) for every event was 1.5 % of reading a trace.
void KinetoParser::ClearEvent() {
  ev_.counters.clear();
  if (touched_n_ > kMaxTouched) {
    ev_ = RawEvent{};
  } else {
    for (int i = 0; i < touched_n_; ++i) *touched_[i] = Scalar{};
    ev_.has_args = false;
  }
  touched_n_ = 0;
}

Status KinetoParser::Error(const char* at, const std::string& what) const {
  return InvalidArgument(fmt::format("{}: {}: {}", name_, w_.Where(w_.OffsetOf(at)), what));
}

Status KinetoParser::Refill() {
  TRAINPROF_RETURN_IF_ERROR(w_.Refill(&too_large_));
  if (opt_.progress) opt_.progress(src_->raw_bytes_done());
  if (opt_.cancelled && opt_.cancelled())
    return Status(StatusCode::kCancelled, fmt::format("{}: cancelled", name_));
  return Status::Ok();
}

ScanResult KinetoParser::EventMember(std::string_view key, const char*& p, const char* e,
                                     RawEvent* ev) {
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
      // CUPTI's range profiler: metric name -> value (Kineto writes "cat" before "args").
      if (t == nullptr && json::KeyIs(ev->cat.text, "cuda_profiler_range") && IsCounterKey(k)) {
        ScanResult r = s_.ValueAt(q, qe, &unused, &s_tmp_, 2);
        if (r == ScanResult::kOk && unused.type == Scalar::kNumber)
          ev->counters.emplace_back(std::string(k), std::string(unused.text));
        return r;
      }
      return s_.ValueAt(q, qe, t ? Touch(t) : &unused, &s_tmp_, 2);
    });
  }
  Scalar unused;
  return s_.ValueAt(p, e, target ? Touch(target) : &unused, scratch, 1);
}

ScanResult KinetoParser::StepEvent(const char*& p, const char* e) {
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
  return ScanResult::kOk;
}

ScanResult KinetoParser::StepEventSep(const char*& p, const char* e) {
  TRAINPROF_JSON_TRY(s_.Ws(p, e));
  if (*p == ',') {
    state_ = State::kEvent;
  } else if (*p == ']') {
    state_ = State::kAfterEvents;
  } else {
    return s_.Fail(p, "expected ',' or ']' after an event");
  }
  ++p;
  return ScanResult::kOk;
}

ScanResult KinetoParser::StepTopKey(const char*& p, const char* e, bool first) {
  TRAINPROF_JSON_TRY(s_.Ws(p, e));
  if (first && *p == '}') {
    ++p;
    state_ = State::kEnd;
    return ScanResult::kOk;
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
    return ScanResult::kOk;
  }
  Scalar v;
  TRAINPROF_JSON_TRY(s_.Value(p, e, &v, &s_tmp_, 1));
  TRAINPROF_JSON_TRY(s_.Ws(p, e));
  if (*p != ',' && *p != '}') return s_.Fail(p, "expected ',' or '}'");
  state_ = *p == '}' ? State::kEnd : State::kTopKey;
  ++p;
  b_.TopValue(key, v.text);
  return ScanResult::kOk;
}

ScanResult KinetoParser::StepStart(const char*& p, const char* e) {
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
  return ScanResult::kOk;
}

ScanResult KinetoParser::StepAfterEvents(const char*& p, const char* e) {
  if (bare_array_) {
    state_ = State::kEnd;
    return ScanResult::kOk;
  }
  TRAINPROF_JSON_TRY(s_.Ws(p, e));
  if (*p == ',')
    state_ = State::kTopKey;
  else if (*p == '}')
    state_ = State::kEnd;
  else
    return s_.Fail(p, "expected ',' or '}' after traceEvents");
  ++p;
  return ScanResult::kOk;
}

ScanResult KinetoParser::Step() {
  const char* p = w_.cur();
  const char* e = w_.end();
  const json::Scanner::Counts before = s_.counts();
  ScanResult r = ScanResult::kOk;
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
      if (r != ScanResult::kOk) break;
      if (*p != ',' && *p != '}') {
        r = s_.Fail(p, "expected ',' or '}'");
        break;
      }
      state_ = *p++ == '}' ? State::kEnd : State::kTopKey;
      break;
    case State::kEventsFirst:
      r = s_.Ws(p, e);
      if (r != ScanResult::kOk) break;
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
      if (r == ScanResult::kOk)
        r = s_.Fail(p, "unexpected data after the end of the JSON document");
      break;
  }
  if (r == ScanResult::kOk) {
    w_.Consume(p);
    NoteOddStrings(before);
  } else {
    s_.set_counts(before);  // the unit will be scanned again
  }
  return r;
}

// Where the first string with a raw control character, or malformed UTF-8, was.
void KinetoParser::NoteOddStrings(const json::Scanner::Counts& before) {
  json::Scanner::Counts now = s_.counts();
  if (now.control > 0 && before.control == 0) first_control_at_ = w_.cur_offset();
  if (now.malformed > 0 && before.malformed == 0) first_malformed_at_ = w_.cur_offset();
}

void KinetoParser::AddStringDiagnostics(TraceModel& m) const {
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
Status KinetoParser::SkipOversized() {
  bool in_events = state_ == State::kEvent || state_ == State::kEventsFirst;
  if (oversized_++ == 0) oversized_at_ = w_.cur_offset();
  TRAINPROF_ASSIGN_OR_RETURN(bool ended, w_.SkipUnit());
  state_ = in_events ? State::kEventSep : state_ == State::kStart ? State::kEnd : State::kTopSep;
  if (!ended) state_ = in_events ? State::kEvent : State::kTopKey;  // cut inside it
  return Status::Ok();
}

// The data ended inside a unit: keep what came before, or fail when nothing did.
Status KinetoParser::CutShort() {
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

Status KinetoParser::Start() {
  TRAINPROF_RETURN_IF_ERROR(Refill());
  if (w_.empty())
    return InvalidArgument(fmt::format("{}: byte 0 (line 1, column 1): the file is empty", name_));
  return Status::Ok();
}

void KinetoParser::StartInEvents(bool bare_array, int64_t stop_at) {
  state_ = State::kEvent;
  saw_events_ = true;
  bare_array_ = bare_array;
  segment_ = true;
  stop_at_ = stop_at;
}

Status KinetoParser::Drive() {
  paused_ = false;
  for (;;) {
    ScanResult r = Step();
    if (r == ScanResult::kErr) return Error(s_.err_at() ? s_.err_at() : w_.cur(), s_.err());
    if (r == ScanResult::kOk) {
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

void KinetoParser::AbsorbSegment(KinetoParser& seg, int64_t at) {
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

StatusOr<TraceModel> KinetoParser::Finish() {
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

StatusOr<TraceModel> KinetoParser::Run() {
  TRAINPROF_RETURN_IF_ERROR(Start());
  TRAINPROF_RETURN_IF_ERROR(Drive());
  return Finish();
}

StatusOr<TraceModel> ParseFrom(ByteSource* src, const std::string& name, const ReadOptions& opt) {
  return KinetoParser(src, name, opt).Run();
}

}  // namespace trainprof::trace
