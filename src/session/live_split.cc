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

// A live view that nobody reads for hours must not grow: far more than a tick's scopes.
constexpr size_t kMaxSpans = 1 << 16;

}  // namespace

void LiveSplitter::Add(ActionKind kind, int64_t begin_ns, int64_t end_ns) {
  const int slot = SplitSlot(kind);
  if (slot < 0 || end_ns < begin_ns) return;
  data_seen_ = data_seen_ || slot == 0;
  std::vector<Span>& spans = spans_[static_cast<size_t>(slot)];
  if (spans.size() >= kMaxSpans) spans.erase(spans.begin(), spans.begin() + kMaxSpans / 2);
  spans.push_back({begin_ns, end_ns});
}

std::optional<report::LiveSplit> LiveSplitter::Take(int64_t begin_ns, int64_t end_ns) {
  std::array<double, kKinds> ns{};
  bool any = false;
  for (size_t k = 0; k < kKinds; ++k) {
    std::vector<Span> in;  // the kind's spans clipped to the window, then their union's length
    for (const Span& s : spans_[k]) {
      const int64_t b = std::max(s.begin, begin_ns), e = std::min(s.end, end_ns);
      if (e > b || (s.end > begin_ns && s.begin < end_ns)) any = true;
      if (e > b) in.push_back({b, e});
    }
    std::sort(in.begin(), in.end(), [](const Span& a, const Span& b) { return a.begin < b.begin; });
    int64_t reach = begin_ns;
    for (const Span& s : in) {
      const int64_t from = std::max(s.begin, reach);
      if (s.end > from) ns[k] += static_cast<double>(s.end - from);
      reach = std::max(reach, s.end);
    }
    std::erase_if(spans_[k], [end_ns](const Span& s) { return s.end <= end_ns; });
  }
  const double window = static_cast<double>(end_ns - begin_ns);
  if (!any || window <= 0) return std::nullopt;
  double sum = 0;
  for (double v : ns) sum += v;
  const double scale = sum > window ? window / sum : 1.0;  // kinds nested in others
  std::array<double, kKinds> share{};
  for (size_t k = 0; k < kKinds; ++k) share[k] = ns[k] * scale / window;
  report::LiveSplit p{share[0], share[1], share[2], share[3], share[4], 0};
  p.other = std::max(0.0, 1.0 - std::min(1.0, sum * scale / window));
  p.data_measured = data_seen_;
  return p;
}

}  // namespace trainprof::session
