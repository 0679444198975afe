// The allocation log and memory by role on logs built by hand: each block's role follows from
// its lifetime and origin against the phases, so every figure below is known by construction.
#include "memory/roles.h"

#include <gtest/gtest.h>

#include <numeric>

#include "memory/allocation_log.h"

namespace trainprof::memory {
namespace {

constexpr int64_t kMiB = 1 << 20;

// A history of one device: blocks made and freed at times that are also their event order.
struct Log {
  AllocationLog log;
  size_t Make(int64_t bytes, int64_t at, int64_t freed = kNever, uint8_t origin = 0) {
    log.blocks.push_back({.device = 0,
                          .bytes = bytes,
                          .alloc_seq = at,
                          .free_seq = freed,
                          .alloc_time = at,
                          .free_time = freed,
                          .addr = static_cast<uint64_t>(log.blocks.size()) * 4096,
                          .origin = origin});
    return log.blocks.size() - 1;
  }
  Role RoleOf(size_t i) const { return log.blocks[i].role; }
};

// One step: weights before the history, a forward (10-19), a backward on autograd's thread
// (20-29), an annotated optimizer step (30-39), and the next step's forward (40-49).
struct OneStep : Log {
  size_t weights, act, temp, grad, grad_temp, moment, opt_temp, workspace, next_act;
  std::vector<PhaseSpan> phases;
  OneStep() {
    weights = Make(100 * kMiB, kBefore);
    act = Make(8 * kMiB, 10, 25);
    temp = Make(4 * kMiB, 11, 12);
    grad = Make(100 * kMiB, 21, kNever, kOnAutogradThread);
    grad_temp = Make(16 * kMiB, 22, 23, kOnAutogradThread);
    workspace = Make(32 * kMiB, 24, kNever, kOnAutogradThread | kWorkspace);
    Make(1 * kMiB, 29, 30, kOnAutogradThread);  // the backward's last block
    moment = Make(200 * kMiB, 31);
    opt_temp = Make(50 * kMiB, 32, 33);
    next_act = Make(8 * kMiB, 41);
    phases = StepPhases(log, 0, {{Phase::kOptimizer, 30, 39}});
    InferRoles(log, 0, phases);
  }
};

TEST(MemoryRoles, PhasesComeFromTheOptimizerAndAutogradsThread) {
  OneStep s;
  ASSERT_EQ(s.phases.size(), 4u);
  EXPECT_EQ(s.phases[0].phase, Phase::kForward);
  EXPECT_EQ(s.phases[0].start, 10);
  EXPECT_EQ(s.phases[0].end, 21);  // up to the backward's first block
  EXPECT_EQ(s.phases[1].phase, Phase::kBackward);
  EXPECT_EQ(s.phases[1].start, 21);
  EXPECT_EQ(s.phases[1].end, 29);
  EXPECT_EQ(s.phases[2].phase, Phase::kOptimizer);
  EXPECT_EQ(s.phases[3].phase, Phase::kForward);
  EXPECT_EQ(s.phases[3].start, 39);
}

TEST(MemoryRoles, EachBlockGetsItsRoleFromItsLifetime) {
  OneStep s;
  EXPECT_EQ(s.RoleOf(s.weights), Role::kParameter);
  EXPECT_EQ(s.log.blocks[s.weights].rule, kBeforeHistory);
  EXPECT_EQ(s.RoleOf(s.act), Role::kActivation);
  EXPECT_EQ(s.RoleOf(s.temp), Role::kTemporary);
  EXPECT_EQ(s.RoleOf(s.grad), Role::kGradient);
  EXPECT_EQ(s.RoleOf(s.grad_temp), Role::kTemporary);
  EXPECT_EQ(s.RoleOf(s.workspace), Role::kUnknown);
  EXPECT_EQ(s.log.blocks[s.workspace].rule, kLibraryWorkspace);
  EXPECT_EQ(s.RoleOf(s.moment), Role::kOptimizerState);
  EXPECT_EQ(s.RoleOf(s.opt_temp), Role::kTemporary);
  // The next forward has no backward after it in the history: not called an activation.
  EXPECT_EQ(s.RoleOf(s.next_act), Role::kUnknown);
}

TEST(MemoryRoles, RolesAtAMomentSumWhatIsLive) {
  OneStep s;
  const RoleBytes at = RolesAt(s.log, 0, 32);  // after the optimizer's temporary was made
  EXPECT_EQ(at[static_cast<size_t>(Role::kParameter)], 100 * kMiB);
  EXPECT_EQ(at[static_cast<size_t>(Role::kGradient)], 100 * kMiB);
  EXPECT_EQ(at[static_cast<size_t>(Role::kOptimizerState)], 200 * kMiB);
  EXPECT_EQ(at[static_cast<size_t>(Role::kTemporary)], 50 * kMiB);
  EXPECT_EQ(at[static_cast<size_t>(Role::kActivation)], 0);  // freed in the backward
  const auto rules = RulesAt(s.log, 0, 32);
  ASSERT_FALSE(rules.empty());
  EXPECT_EQ(rules.front().first, kOptimizerKept);
  EXPECT_EQ(rules.front().second, 200 * kMiB);
}

TEST(MemoryRoles, TheTimelineEndsAtWhatIsLiveAtTheEnd) {
  OneStep s;
  const auto tl = RoleTimeline(s.log, 0, 32, 4);
  ASSERT_FALSE(tl.empty());
  const RoleBytes end = RolesAt(s.log, 0, 1000);
  EXPECT_EQ(tl.back().bytes, end);
  const bool has_peak = std::ranges::any_of(tl, [](const RolePoint& p) { return p.time == 32; });
  EXPECT_TRUE(has_peak);
}

TEST(MemoryRoles, AnnotatedForwardAndBackwardAreTakenAsTheyAre) {
  Log l;
  const size_t act = l.Make(kMiB, 5, 15);
  const size_t grad = l.Make(kMiB, 12, kNever, kOnAutogradThread);
  const auto phases = StepPhases(l.log, 0, {{Phase::kForward, 0, 9}, {Phase::kBackward, 10, 13}});
  ASSERT_EQ(phases.size(), 2u);
  InferRoles(l.log, 0, phases);
  EXPECT_EQ(l.RoleOf(act), Role::kActivation);
  EXPECT_EQ(l.RoleOf(grad), Role::kGradient);
}

TEST(MemoryRoles, AForwardOnlyHistoryKeepsActivationsPastIt) {
  Log l;
  const size_t kept = l.Make(kMiB, 1);
  const size_t temp = l.Make(kMiB, 2, 3);
  const auto phases = StepPhases(l.log, 0, {});
  ASSERT_EQ(phases.size(), 1u);
  InferRoles(l.log, 0, phases);
  EXPECT_EQ(l.RoleOf(kept), Role::kActivation);
  EXPECT_EQ(l.log.blocks[kept].rule, kKeptPastForward);
  EXPECT_EQ(l.RoleOf(temp), Role::kTemporary);
}

TEST(MemoryRoles, OptimizerStepsToldByFramesAlone) {
  Log l;
  l.Make(kMiB, 1, 5, kOnAutogradThread);
  const size_t state = l.Make(4 * kMiB, 6, kNever, kOptimizerStep);
  l.Make(kMiB, 7, 8, kOptimizerStep);
  const auto phases = StepPhases(l.log, 0, {});
  InferRoles(l.log, 0, phases);
  EXPECT_EQ(l.RoleOf(state), Role::kOptimizerState);
}

TEST(MemoryRoles, ASourcesExactRoleIsKept) {
  Log l;
  const size_t i = l.Make(kMiB, 1, 2);
  l.log.blocks[i].role = Role::kInput;
  l.log.blocks[i].rule = kExact;
  InferRoles(l.log, 0, StepPhases(l.log, 0, {}));
  EXPECT_EQ(l.RoleOf(i), Role::kInput);
}

TEST(AllocationLog, LiveAtGroupsByAnyKeyLargestFirst) {
  Log l;
  l.Make(3, 1);
  l.Make(5, 2, 4);
  l.Make(7, 3);
  for (size_t i = 0; i < 3; ++i) l.log.blocks[i].op = i == 1 ? 9u : 8u;
  const auto at3 = LiveAt(l.log, 0, 3, [](const Block& b) { return b.op; });
  ASSERT_EQ(at3.size(), 2u);
  EXPECT_EQ(at3[0].key, 8u);
  EXPECT_EQ(at3[0].bytes, 10);
  EXPECT_EQ(at3[0].blocks, 2);
  EXPECT_EQ(at3[1].bytes, 5);
  const auto at4 = LiveAt(l.log, 0, 4, [](const Block& b) { return b.op; });
  ASSERT_EQ(at4.size(), 1u);  // the free at event 4 ends the block
  const auto largest = LargestLive(l.log, 0, 3, 1, [](const Block&) { return true; });
  ASSERT_EQ(largest.size(), 1u);
  EXPECT_EQ(largest[0]->bytes, 7);
  EXPECT_STREQ(RoleName(Role::kOptimizerState), "optimizer state");
}

}  // namespace
}  // namespace trainprof::memory
