#include "session/live_split.h"

#include <algorithm>

namespace trainprof::session {

namespace {

// The split's slot of a kind; -1 for kinds the split does not show (loop, step, other).
int SplitSlot(ActionKind kind) {
  switch (kind) {
    case ActionKind::kDataLoader:
      return 0;
    case ActionKind::kForward:
      return 1;
    case ActionKind::kBackward:
      return 2;
    case ActionKind::kOptimizer:
      return 3;
    case ActionKind::kCommunication:
      return 4;
    default:
      return -1;
  }
}

constexpr size_t kKeptSpans = 16;  // per kind: enough for the nesting a tick can close

}  // namespace

// A scope ends after the scopes nested in it, so the spans of its kind that began inside it
// were counted already: take them back and count the outer one whole.
void LiveSplitter::Add(ActionKind kind, int64_t begin_ns, int64_t end_ns) {
  const int slot = SplitSlot(kind);
  if (slot < 0 || end_ns < begin_ns) return;
  std::vector<Span>& spans = counted_[static_cast<size_t>(slot)];
  int64_t& ns = ns_[static_cast<size_t>(slot)];
  while (!spans.empty() && spans.back().begin >= begin_ns) {
    ns -= spans.back().ns;
    spans.pop_back();
  }
  spans.push_back({begin_ns, end_ns - begin_ns});
  ns += end_ns - begin_ns;
  any_ = true;
}

std::optional<report::LiveSplit> LiveSplitter::Take(int64_t window_ns) {
  const bool any = any_;
  std::array<double, kKinds> share{};
  for (size_t k = 0; k < kKinds; ++k) {
    share[k] = window_ns > 0 ? std::clamp(static_cast<double>(ns_[k]) / window_ns, 0.0, 1.0) : 0;
    ns_[k] = 0;
    auto& spans = counted_[k];
    if (spans.size() > kKeptSpans) spans.erase(spans.begin(), spans.end() - kKeptSpans);
  }
  any_ = false;
  if (!any || window_ns <= 0) return std::nullopt;
  report::LiveSplit p{share[0], share[1], share[2], share[3], share[4], 0};
  p.other = std::max(0.0, 1.0 - (share[0] + share[1] + share[2] + share[3] + share[4]));
  return p;
}

}  // namespace trainprof::session
