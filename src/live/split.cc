#include "live/split.h"

#include <algorithm>

namespace trainprof::live {

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

// The length of the union of `spans` (sorted here), nested and overlapping ones counted once.
template <typename Span>
double UnionLength(std::vector<Span>& spans) {
  std::sort(spans.begin(), spans.end(),
            [](const Span& a, const Span& b) { return a.begin < b.begin; });
  double ns = 0;
  int64_t reach = spans.empty() ? 0 : spans.front().begin;
  for (const Span& s : spans) {
    const int64_t from = std::max(s.begin, reach);
    if (s.end > from) ns += static_cast<double>(s.end - from);
    reach = std::max(reach, s.end);
  }
  return ns;
}

}  // namespace

void LiveSplitter::Add(ActionKind kind, int64_t begin_ns, int64_t end_ns) {
  const int slot = SplitSlot(kind);
  if (slot < 0 || end_ns < begin_ns) return;
  data_seen_ = data_seen_ || slot == 0;
  std::vector<Span>& spans = spans_[static_cast<size_t>(slot)];
  if (spans.size() >= kMaxSpans) spans.erase(spans.begin(), spans.begin() + kMaxSpans / 2);
  spans.push_back({begin_ns, end_ns});
}

std::optional<live::LiveSplit> LiveSplitter::Take(int64_t begin_ns, int64_t end_ns) {
  std::array<double, kKinds> ns{};
  std::vector<Span> all;  // every kind's clipped spans: what the split covers, once
  bool any = false;
  for (size_t k = 0; k < kKinds; ++k) {
    std::vector<Span> in;  // the kind's spans clipped to the window, then their union's length
    for (const Span& s : spans_[k]) {
      const int64_t b = std::max(s.begin, begin_ns), e = std::min(s.end, end_ns);
      if (e > b || (s.end > begin_ns && s.begin < end_ns)) any = true;
      if (e > b) in.push_back({b, e});
    }
    all.insert(all.end(), in.begin(), in.end());
    ns[k] = UnionLength(in);
    std::erase_if(spans_[k], [end_ns](const Span& s) { return s.end <= end_ns; });
  }
  const double window = static_cast<double>(end_ns - begin_ns);
  if (!any || window <= 0) return std::nullopt;
  double sum = 0;
  for (double v : ns) sum += v;
  // Kinds nested in others (communication inside backward) are in both: their shares are scaled
  // to the time the kinds cover together, and the rest of the window is "other".
  const double covered = UnionLength(all);
  const double scale = sum > covered ? covered / sum : 1.0;
  std::array<double, kKinds> share{};
  for (size_t k = 0; k < kKinds; ++k) share[k] = ns[k] * scale / window;
  live::LiveSplit p{share[0], share[1], share[2], share[3], share[4], 0};
  p.other = std::max(0.0, 1.0 - covered / window);
  p.data_measured = data_seen_;
  return p;
}

}  // namespace trainprof::live
