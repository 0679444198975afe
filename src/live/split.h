// The live view's split of the loop thread's time into its scopes' kinds (issue 57): each kind's
// scopes of that thread charged by their overlap with a window of time, a scope nested in one of
// its own kind counted once (forward inside forward), and the shares held to 100 % in all
// (a communication scope inside backward is in both). Fed from record::ScanNew() on the live
// thread; never touches the scopes' path.
//
// Scopes are recorded when they end, so a window is only told once its scopes have ended: the
// live view asks for the window before the last one (a tick late), when a scope up to a tick
// long that was running at its end has been recorded.
//
//   LiveSplitter split;
//   split.Add(loc->kind, begin_ns, end_ns);        // events in the order they ended
//   std::optional<live::LiveSplit> p = split.Take(t0, t1);
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "live/snapshot.h"
#include "trainprof/scope.h"

namespace trainprof::live {

class LiveSplitter {
 public:
  // One finished scope of the loop thread, ns on any one clock.
  void Add(ActionKind kind, int64_t begin_ns, int64_t end_ns);
  // The shares of [begin_ns, end_ns) that the scopes added so far cover, per kind; nullopt when
  // no scope of a split kind overlaps it. Forgets the scopes that end by end_ns: the next
  // window starts there.
  std::optional<live::LiveSplit> Take(int64_t begin_ns, int64_t end_ns);

 private:
  static constexpr size_t kKinds = 5;  // data wait, forward, backward, optimizer, communication
  struct Span {
    int64_t begin, end;
  };
  std::array<std::vector<Span>, kKinds> spans_;
  bool data_seen_ = false;  // a data-loader scope was ever added: the data wait is measured
};

}  // namespace trainprof::live
