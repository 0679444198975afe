#include "memory/roles.h"

#include <algorithm>
#include <optional>
#include <string_view>

namespace trainprof::memory {
namespace {

bool OnDevice(const Block& b, int64_t device) { return b.device == device; }

int64_t LastTime(const Block& b) { return b.free_time != kNever ? b.free_time : b.alloc_time; }

// The history's first and last times on the device (of the blocks it made or freed).
std::pair<int64_t, int64_t> TimeRange(const AllocationLog& log, int64_t device) {
  int64_t lo = kNever, hi = kBefore;
  for (const Block& b : log.blocks) {
    if (!OnDevice(b, device)) continue;
    if (b.alloc_seq != kBefore) lo = std::min(lo, b.alloc_time), hi = std::max(hi, b.alloc_time);
    if (b.free_seq != kNever) lo = std::min(lo, b.free_time), hi = std::max(hi, LastTime(b));
  }
  return lo > hi ? std::pair<int64_t, int64_t>{0, 0} : std::pair{lo, hi};
}

// Optimizer steps told by frames alone: runs of blocks made in an optimizer's step(), a run
// ending at a block made on autograd's thread (the next step's backward).
std::vector<PhaseSpan> OptimizerRuns(const AllocationLog& log, int64_t device) {
  std::vector<PhaseSpan> out;
  bool open = false;
  for (const Block& b : log.blocks) {
    if (!OnDevice(b, device) || b.alloc_seq == kBefore) continue;
    if (b.origin & kOnAutogradThread) open = false;
    if (!(b.origin & kOptimizerStep)) continue;
    if (!open) out.push_back({Phase::kOptimizer, b.alloc_time, b.alloc_time});
    out.back().end = std::max(out.back().end, b.alloc_time);
    open = true;
  }
  return out;
}

// The backward and forward of the span [c0, c1) between two optimizer steps.
void AddCycle(const AllocationLog& log, int64_t device, int64_t c0, int64_t c1, bool last,
              const std::vector<PhaseSpan>& zero_grads, std::vector<PhaseSpan>& out) {
  int64_t b0 = kNever, b1 = kBefore;
  for (const Block& b : log.blocks) {
    if (!OnDevice(b, device) || !(b.origin & kOnAutogradThread) || b.alloc_seq == kBefore) continue;
    if (b.alloc_time < c0 || b.alloc_time > c1 || (b.alloc_time == c1 && !last)) continue;
    b0 = std::min(b0, b.alloc_time), b1 = std::max(b1, b.alloc_time);
  }
  const bool backward = b0 <= b1;
  const int64_t forward_end = backward ? b0 : c1;
  int64_t forward_start = c0;
  for (const PhaseSpan& z : zero_grads)
    if (z.start >= c0 && z.end < forward_end) forward_start = std::max(forward_start, z.end);
  if (forward_start < forward_end || (!backward && forward_start <= forward_end))
    out.push_back({Phase::kForward, forward_start, forward_end});
  if (backward) out.push_back({Phase::kBackward, b0, b1});
}

int Rank(const PhaseSpan& p) {
  return p.phase == Phase::kOptimizer || p.phase == Phase::kZeroGrad ? 1 : 0;
}

// The phases by start, to find the span holding a time in O(log n + overlaps) and the backward
// after each forward once: a history of many steps has thousands of spans and millions of blocks.
class PhaseIndex {
 public:
  explicit PhaseIndex(std::vector<PhaseSpan> phases) : p_(std::move(phases)) {
    std::ranges::stable_sort(p_, {}, &PhaseSpan::start);
    max_end_.resize(p_.size());
    for (size_t i = 0; i < p_.size(); ++i)
      max_end_[i] = std::max(i > 0 ? max_end_[i - 1] : kBefore, p_[i].end);
    after_.assign(p_.size(), nullptr);
    for (size_t i = 0; i < p_.size(); ++i)
      if (p_[i].phase == Phase::kForward) after_[i] = FindBackwardAfter(p_[i]);
    any_backward_ =
        std::ranges::any_of(p_, [](const PhaseSpan& x) { return x.phase == Phase::kBackward; });
  }

  // The span holding t: an annotated one (optimizer, zero_grad) first, else the latest-starting.
  const PhaseSpan* At(int64_t t) const {
    auto it = std::upper_bound(p_.begin(), p_.end(), t,
                               [](int64_t v, const PhaseSpan& x) { return v < x.start; });
    const PhaseSpan* best = nullptr;
    for (size_t i = static_cast<size_t>(it - p_.begin()); i-- > 0 && max_end_[i] >= t;) {
      const PhaseSpan& x = p_[i];
      if (t > x.end) continue;
      if (best == nullptr || Rank(x) > Rank(*best) ||
          (Rank(x) == Rank(*best) && x.start >= best->start && &x < best))
        best = &x;
    }
    return best;
  }

  // The backward that follows forward span f before the next optimizer step, if one does.
  const PhaseSpan* BackwardAfter(const PhaseSpan* f) const {
    return after_[static_cast<size_t>(f - p_.data())];
  }
  bool any_backward() const { return any_backward_; }

 private:
  const PhaseSpan* FindBackwardAfter(const PhaseSpan& f) const {
    const PhaseSpan* best = nullptr;
    for (const PhaseSpan& x : p_)
      if (x.phase == Phase::kBackward && x.start >= f.end && (!best || x.start < best->start))
        best = &x;
    for (const PhaseSpan& x : p_)
      if (best && x.phase == Phase::kOptimizer && x.start >= f.end && x.end < best->start)
        return nullptr;
    return best;
  }

  std::vector<PhaseSpan> p_;
  std::vector<int64_t> max_end_;  // the latest end among spans [0, i]
  std::vector<const PhaseSpan*> after_;
  bool any_backward_ = false;
};

void Decide(Block& b, Role role, Rule rule) {
  b.role = role;
  b.rule = rule;
}

void InferOne(Block& b, const PhaseIndex& phases) {
  if (b.origin & kWorkspace) return Decide(b, Role::kUnknown, kLibraryWorkspace);
  if (b.alloc_seq == kBefore) return Decide(b, Role::kParameter, kBeforeHistory);
  if (b.origin & kMadeInModelBuild) return Decide(b, Role::kParameter, kModelBuild);
  const PhaseSpan* p = phases.At(b.alloc_time);
  if (p == nullptr) return;
  if (b.free_time <= p->end) return Decide(b, Role::kTemporary, kTemporaryInPhase);
  if (p->phase == Phase::kOptimizer) return Decide(b, Role::kOptimizerState, kOptimizerKept);
  if (p->phase == Phase::kBackward && (b.origin & kOnAutogradThread))
    return Decide(b, Role::kGradient, kGradientKept);
  if (p->phase != Phase::kForward) return;
  const PhaseSpan* back = phases.BackwardAfter(p);
  if (back != nullptr && b.free_time >= back->start)
    return Decide(b, Role::kActivation, kActivationKept);
  if (!phases.any_backward()) Decide(b, Role::kActivation, kKeptPastForward);
}

}  // namespace

const char* PhaseName(Phase p) {
  switch (p) {
    case Phase::kForward:
      return "forward";
    case Phase::kBackward:
      return "backward";
    case Phase::kOptimizer:
      return "optimizer";
    case Phase::kZeroGrad:
      break;
  }
  return "zero_grad";
}

const char* RuleText(uint8_t rule) {
  static constexpr const char* kText[kRules] = {
      "no rule applies",
      "known exactly in the training loop",
      "resident before the recorded history began (the model's weights)",
      ("resident before the history, which began after the optimizer made its state: the "
       "weights and the optimizer's state together"),
      "made while a module was built or moved (Module.__init__, .to, .cuda)",
      "made in the optimizer's step and alive after it",
      "made on autograd's backward thread and alive after the backward",
      "made in the forward and alive into the backward",
      "made in the forward and alive after it, no backward recorded (saved for one, or outputs)",
      "made and freed inside one phase",
      "a library's workspace (cuBLAS), made once and kept",
      "the allocator's rounding (block sizes in the segments against the sizes requested)",
      "PyTorch's memory profiler's own category (export_memory_timeline_raw)",
  };
  return rule < kRules ? kText[rule] : "no rule applies";
}

std::vector<PhaseSpan> StepPhases(const AllocationLog& log, int64_t device,
                                  std::vector<PhaseSpan> annotated) {
  std::vector<PhaseSpan> optimizers, zero_grads;
  for (const PhaseSpan& p : annotated) {
    if (p.phase == Phase::kOptimizer) optimizers.push_back(p);
    if (p.phase == Phase::kZeroGrad) zero_grads.push_back(p);
  }
  const bool optimizer_annotated = !optimizers.empty();
  if (!optimizer_annotated) optimizers = OptimizerRuns(log, device);
  std::ranges::sort(optimizers, {}, &PhaseSpan::start);
  std::vector<PhaseSpan> out;
  if (std::ranges::any_of(annotated,
                          [](const PhaseSpan& p) { return p.phase == Phase::kBackward; })) {
    // A told backward: the annotated spans as they are, and the optimizer's runs if none was.
    out = std::move(annotated);
    if (!optimizer_annotated) out.insert(out.end(), optimizers.begin(), optimizers.end());
    std::ranges::sort(out, {}, &PhaseSpan::start);
    return out;
  }
  out = optimizers;
  out.insert(out.end(), zero_grads.begin(), zero_grads.end());
  const auto [first, last] = TimeRange(log, device);
  int64_t c0 = first;
  for (const PhaseSpan& o : optimizers) {
    AddCycle(log, device, c0, o.start, false, zero_grads, out);
    c0 = o.end;
  }
  if (c0 < last || optimizers.empty()) AddCycle(log, device, c0, last, true, zero_grads, out);
  std::ranges::sort(out, {}, &PhaseSpan::start);
  return out;
}

std::optional<Phase> OptimizerPhaseOf(std::string_view name) {
  if (name.starts_with("Optimizer.step")) return Phase::kOptimizer;
  if (name.starts_with("Optimizer.zero_grad")) return Phase::kZeroGrad;
  return std::nullopt;
}

void InferRoles(AllocationLog& log, int64_t device, const std::vector<PhaseSpan>& phases) {
  bool state_made = false;
  const PhaseIndex index(phases);
  for (Block& b : log.blocks) {
    if (OnDevice(b, device) && b.rule == kNoRule) InferOne(b, index);
    state_made |= OnDevice(b, device) && b.role == Role::kOptimizerState;
  }
  const bool steps =
      std::ranges::any_of(phases, [](const PhaseSpan& p) { return p.phase == Phase::kOptimizer; });
  if (!steps || state_made) return;
  for (Block& b : log.blocks)
    if (OnDevice(b, device) && b.rule == kBeforeHistory)
      Decide(b, Role::kUnknown, kBeforeWithState);
}

RoleBytes RolesAt(const AllocationLog& log, int64_t device, int64_t seq) {
  RoleBytes out{};
  for (const Block& b : log.blocks)
    if (OnDevice(b, device) && LiveAfter(b, seq)) out[static_cast<size_t>(b.role)] += b.bytes;
  return out;
}

std::vector<std::pair<uint8_t, int64_t>> RulesAt(const AllocationLog& log, int64_t device,
                                                 int64_t seq) {
  std::array<int64_t, kRules> by{};
  for (const Block& b : log.blocks)
    if (OnDevice(b, device) && LiveAfter(b, seq) && b.rule < kRules) by[b.rule] += b.bytes;
  std::vector<std::pair<uint8_t, int64_t>> out;
  for (uint8_t r = 0; r < kRules; ++r)
    if (by[r] != 0) out.emplace_back(r, by[r]);
  std::ranges::stable_sort(out, [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

std::vector<RolePoint> RoleTimeline(const AllocationLog& log, int64_t device, int64_t peak_seq,
                                    size_t points) {
  struct Change {
    int64_t seq, time, bytes;
    Role role;
  };
  std::vector<Change> changes;
  RoleBytes now{};
  for (const Block& b : log.blocks) {
    if (!OnDevice(b, device)) continue;
    if (b.alloc_seq == kBefore)
      now[static_cast<size_t>(b.role)] += b.bytes;
    else
      changes.push_back({b.alloc_seq, b.alloc_time, b.bytes, b.role});
    if (b.free_seq != kNever) changes.push_back({b.free_seq, b.free_time, -b.bytes, b.role});
  }
  std::ranges::stable_sort(changes, {}, &Change::seq);
  const size_t every = std::max<size_t>(1, changes.size() / std::max<size_t>(1, points));
  std::vector<RolePoint> out;
  for (size_t i = 0; i < changes.size(); ++i) {
    now[static_cast<size_t>(changes[i].role)] += changes[i].bytes;
    const bool group_end = i + 1 == changes.size() || changes[i + 1].seq != changes[i].seq;
    if (group_end &&
        (i % every == every - 1 || changes[i].seq == peak_seq || i + 1 == changes.size()))
      out.push_back({changes[i].time, now});
  }
  return out;
}

}  // namespace trainprof::memory
