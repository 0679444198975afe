#include "live/split.h"

#include <gtest/gtest.h>

namespace trainprof::live {
namespace {

constexpr int64_t kMs = 1'000'000;

// A 100 ms window: data 20 ms, forward 30 ms (a nested forward counted once), backward 25 ms,
// optimizer 5 ms, a loop scope around all of it (not a split kind); other is the rest, 20 ms.
TEST(LiveSplitter, SharesOfTheWindowWithNestedScopesCountedOnce) {
  LiveSplitter split;
  split.Add(ActionKind::kDataLoader, 0, 20 * kMs);
  split.Add(ActionKind::kForward, 25 * kMs, 35 * kMs);  // a submodule's forward, inside
  split.Add(ActionKind::kForward, 20 * kMs, 50 * kMs);
  split.Add(ActionKind::kBackward, 50 * kMs, 75 * kMs);
  split.Add(ActionKind::kOptimizer, 75 * kMs, 80 * kMs);
  split.Add(ActionKind::kLoop, 0, 80 * kMs);
  const auto p = split.Take(0, 100 * kMs);
  ASSERT_TRUE(p.has_value());
  EXPECT_NEAR(p->data_wait, 0.20, 1e-12);
  EXPECT_NEAR(p->forward, 0.30, 1e-12);
  EXPECT_NEAR(p->backward, 0.25, 1e-12);
  EXPECT_NEAR(p->optimizer, 0.05, 1e-12);
  EXPECT_DOUBLE_EQ(p->communication, 0);
  EXPECT_NEAR(p->other, 0.20, 1e-12);
}

// No scope of a split kind since the last tick: not measured, never "all other".
TEST(LiveSplitter, NothingRecordedIsNotMeasured) {
  LiveSplitter split;
  split.Add(ActionKind::kOther, 0, 10 * kMs);
  EXPECT_FALSE(split.Take(0, 100 * kMs).has_value());
  split.Add(ActionKind::kCommunication, 100 * kMs, 140 * kMs);
  const auto p = split.Take(100 * kMs, 150 * kMs);
  ASSERT_TRUE(p.has_value());
  EXPECT_NEAR(p->communication, 0.8, 1e-12);
  EXPECT_FALSE(split.Take(150 * kMs, 200 * kMs).has_value());  // the next window starts empty
}

// Issue 69: a loop of forward 0.5 s and backward 1.0 s told every second. Each scope is charged
// its overlap with each window, so every window sums to 100 % and over whole steps the split is
// the truth, 1/3 and 2/3, with nothing "other".
TEST(LiveSplitter, ScopesLongerThanTheWindowAreChargedByOverlap) {
  constexpr int64_t kS = 1000 * kMs;
  LiveSplitter split;
  double forward = 0, backward = 0;
  int64_t added_until = 0;
  for (int64_t w = 0; w < 6; ++w) {
    // The scopes that ended before the end of the next window (the view asks a tick late).
    for (; added_until * 3 * kS / 2 + 3 * kS / 2 <= (w + 2) * kS; ++added_until) {
      const int64_t t0 = added_until * 3 * kS / 2;
      split.Add(ActionKind::kForward, t0, t0 + kS / 2);
      split.Add(ActionKind::kBackward, t0 + kS / 2, t0 + 3 * kS / 2);
    }
    const auto p = split.Take(w * kS, (w + 1) * kS);
    ASSERT_TRUE(p.has_value()) << w;
    EXPECT_NEAR(p->forward + p->backward + p->other, 1.0, 1e-12) << w;
    EXPECT_NEAR(p->other, 0.0, 1e-12) << w;
    forward += p->forward;
    backward += p->backward;
  }
  EXPECT_NEAR(forward / 6, 1.0 / 3, 1e-12);
  EXPECT_NEAR(backward / 6, 2.0 / 3, 1e-12);
}

// A communication scope inside backward is in both kinds; the shares still sum to 100 %.
TEST(LiveSplitter, NestedKindsAreHeldToTheWindow) {
  LiveSplitter split;
  split.Add(ActionKind::kCommunication, 20 * kMs, 60 * kMs);
  split.Add(ActionKind::kBackward, 0, 100 * kMs);
  const auto p = split.Take(0, 100 * kMs);
  ASSERT_TRUE(p.has_value());
  EXPECT_NEAR(p->backward + p->communication + p->other, 1.0, 1e-12);
  EXPECT_NEAR(p->backward / p->communication, 100.0 / 40, 1e-9);
}

// Nested kinds that do not fill the window: "other" is what no kind covers (20 ms here), not
// what is left after their sum (which counts the communication twice and left 0).
TEST(LiveSplitter, OtherIsTheTimeNoKindCovers) {
  LiveSplitter split;
  split.Add(ActionKind::kCommunication, 10 * kMs, 30 * kMs);
  split.Add(ActionKind::kBackward, 0, 50 * kMs);
  split.Add(ActionKind::kForward, 50 * kMs, 80 * kMs);
  const auto p = split.Take(0, 100 * kMs);
  ASSERT_TRUE(p.has_value());
  EXPECT_NEAR(p->other, 0.20, 1e-12);
  EXPECT_NEAR(p->backward + p->communication + p->forward + p->other, 1.0, 1e-12);
  EXPECT_NEAR(p->forward / p->backward, 30.0 / 50, 1e-9);
}

}  // namespace
}  // namespace trainprof::live
