// The live view's split of the loop thread's time into its scopes' kinds (issue 57): the
// recorded scopes of that thread since the last tick, summed per ActionKind, a scope nested in
// one of its own kind counted once (forward inside forward). Fed from record::ScanNew() on the
// live thread; never touches the scopes' path.
//
//   LiveSplitter split;
//   split.Add(loc->kind, begin_ns, end_ns);        // events in the order they ended
//   std::optional<report::LiveSplit> p = split.Take(window_ns);
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "report/live_snapshot.h"
#include "trainprof/scope.h"

namespace trainprof::session {

class LiveSplitter {
 public:
  // One finished scope of the loop thread, ns on any one clock.
  void Add(ActionKind kind, int64_t begin_ns, int64_t end_ns);
  // The shares of `window_ns` since the last Take(); nullopt when no scope of a split kind
  // ended in it.
  std::optional<report::LiveSplit> Take(int64_t window_ns);

 private:
  static constexpr size_t kKinds = 5;  // data wait, forward, backward, optimizer, communication
  struct Span {
    int64_t begin, ns;
  };
  std::array<std::vector<Span>, kKinds> counted_;  // the last scopes counted, per kind
  std::array<int64_t, kKinds> ns_{};
  bool any_ = false;
};

}  // namespace trainprof::session
