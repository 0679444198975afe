// The Kineto parser: the state machine that walks a trace's JSON one unit at a time (an event,
// or one top-level member) over a window of decoded bytes (json_scanner.h) and hands each event
// to the EventBuilder (kineto_builder.h). When a unit runs past the window, the window is
// refilled and the unit scanned again; nothing is committed until a unit scanned whole, so a cut
// file keeps every complete event before the cut. A unit larger than ReadOptions::max_unit_bytes
// is streamed past and counted, so one giant string cannot take the memory.
//
// Internal to the reader: kineto_reader.cc drives one KinetoParser over a file, kineto_parts.cc
// several over parts of one file.
//
//   KinetoParser p(src, "rank0.json", options);
//   StatusOr<TraceModel> m = p.Run();  // errors: "<file>: byte B (line L, column C): <what>"
#pragma once

#include <cstdint>
#include <string>

#include "trace/byte_source.h"
#include "trace/kineto/json_scanner.h"
#include "trace/kineto/kineto_builder.h"
#include "trace/read_options.h"
#include "trace/trace_model.h"
#include "trainprof/status.h"

namespace trainprof::trace {

class KinetoParser {
 public:
  KinetoParser(ByteSource* src, std::string name, const ReadOptions& opt)
      : src_(src),
        name_(std::move(name)),
        opt_(opt),
        w_(src, opt.chunk_bytes, opt.max_unit_bytes),
        b_(name_) {}
  KinetoParser(const KinetoParser&) = delete;  // touched_ points into ev_
  KinetoParser& operator=(const KinetoParser&) = delete;

  StatusOr<TraceModel> Run();

  // Room for the events of `json_bytes` of JSON (TraceModel::ReserveEvents), at Kineto's
  // fewest bytes an event: its events take 300-450 bytes, a terse writer's 100 and more.
  void ReserveForBytes(int64_t json_bytes) {
    if (json_bytes > 0) b_.model().ReserveEvents(static_cast<size_t>(json_bytes / 128));
  }

  // Reading in parts (ReadInParts): this parser starts at an event boundary inside the event
  // list, and must end at `stop_at` (relative to its start) or, for the last, at the end.
  void StartInEvents(bool bare_array, int64_t stop_at);
  // The first segment pauses at the event boundary `stop_at`; -1: none.
  void set_stop(int64_t stop_at) { stop_at_ = stop_at; }
  Status Start();
  // Start() over a part already in memory (`n` bytes of `buf`, n below buf.size()) instead of
  // the source.
  Status StartInMemory(RawBuffer buf, size_t n) {
    w_.Adopt(std::move(buf), n);
    return Start();
  }
  // Steps until the document ends, or until paused at the stop. A segment that cannot end
  // cleanly there fails, so that the first parser reads its bytes instead.
  Status Drive();
  bool paused() const { return paused_; }
  void set_read_segments(int n) { b_.model().read_segments = n; }
  TraceModel& model() { return b_.model(); }
  bool ended() const { return state_ == State::kEnd; }
  // A part done reading frees its window at once, keeping where the window ended; returns the
  // window's buffer (to be used again).
  RawBuffer ReleaseWindow() {
    window_end_ = w_.end_offset();
    return w_.Release();
  }
  // Takes in a later part that started at decoded offset `at`, ended where it should and
  // released its window.
  void AbsorbSegment(KinetoParser& seg, int64_t at);
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

  json::ScanResult Step();
  json::ScanResult StepStart(const char*& p, const char* e);
  json::ScanResult StepTopKey(const char*& p, const char* e, bool first);
  json::ScanResult StepEvent(const char*& p, const char* e);
  json::ScanResult StepEventSep(const char*& p, const char* e);
  json::ScanResult StepAfterEvents(const char*& p, const char* e);
  json::ScanResult EventMember(std::string_view key, const char*& p, const char* e, RawEvent* ev);
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

// One KinetoParser over `src` from its start: the sequential reader.
StatusOr<TraceModel> ParseFrom(ByteSource* src, const std::string& name, const ReadOptions& opt);

}  // namespace trainprof::trace
