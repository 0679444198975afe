#include "record/recorder.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace trainprof::record {
namespace {

void Nested() {
  TRAINPROF_SCOPE("outer");
  { TRAINPROF_SCOPE_KIND("inner", ActionKind::kForward); }
}

const ThreadEvents* FindThread(const std::vector<ThreadEvents>& t, const std::string& name) {
  for (const auto& x : t) {
    if (x.name == name) return &x;
  }
  return nullptr;
}

TEST(Recorder, RecordsNestedScopesWithDepthOnlyWhileRecording) {
  auto epoch = BeginEpoch(1024);
  ASSERT_TRUE(epoch.ok());
  SetThreadName("recorder-test-main");
  Nested();  // not recording yet
  SetRecording(true);
  Nested();
  SetRecording(false);
  Nested();
  auto threads = Collect(*epoch);
  EndEpoch(*epoch);
  const ThreadEvents* me = FindThread(threads, "recorder-test-main");
  ASSERT_NE(me, nullptr);
  ASSERT_EQ(me->events.size(), 2u);
  // The inner scope ends first.
  EXPECT_STREQ(me->events[0].loc->name, "inner");
  EXPECT_EQ(me->events[0].depth, 1u);
  EXPECT_EQ(me->events[0].loc->kind, ActionKind::kForward);
  EXPECT_STREQ(me->events[1].loc->name, "outer");
  EXPECT_EQ(me->events[1].depth, 0u);
  EXPECT_LE(me->events[1].begin, me->events[0].begin);
  EXPECT_GE(me->events[1].end, me->events[0].end);
  EXPECT_EQ(me->dropped, 0u);
}

TEST(Recorder, SecondEpochWhileOneIsActiveFails) {
  auto a = BeginEpoch(16);
  ASSERT_TRUE(a.ok());
  auto b = BeginEpoch(16);
  EXPECT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kFailedPrecondition);
  EndEpoch(*a);
}

TEST(Recorder, FullBufferCountsDroppedEventsAndKeepsTheFirst) {
  auto epoch = BeginEpoch(1024);
  ASSERT_TRUE(epoch.ok());
  SetRecording(true);
  std::thread t([] {
    SetThreadName("recorder-test-full");
    for (int i = 0; i < 5000; ++i) {
      TRAINPROF_SCOPE("tick");
    }
  });
  t.join();
  SetRecording(false);
  auto threads = Collect(*epoch);
  EndEpoch(*epoch);
  const ThreadEvents* full = FindThread(threads, "recorder-test-full");
  ASSERT_NE(full, nullptr);
  EXPECT_EQ(full->events.size(), 1024u);
  EXPECT_EQ(full->dropped, 5000u - 1024u);
}

TEST(Recorder, ManyThreadsManyChunksNothingLost) {
  auto epoch = BeginEpoch(1 << 20);
  ASSERT_TRUE(epoch.ok());
  SetRecording(true);
  constexpr int kThreads = 4, kEvents = 40000;  // > 2 chunks per thread
  std::vector<std::thread> ts;
  for (int i = 0; i < kThreads; ++i) {
    ts.emplace_back([i] {
      SetThreadName("recorder-mt-" + std::to_string(i));
      for (int j = 0; j < kEvents; ++j) {
        TRAINPROF_SCOPE("work");
      }
    });
  }
  // Collect while the writers run: it must see a consistent prefix.
  auto partial = Collect(*epoch);
  for (auto& t : ts) t.join();
  SetRecording(false);
  auto threads = Collect(*epoch);
  EndEpoch(*epoch);
  for (const auto& p : partial) {
    for (const auto& e : p.events) ASSERT_NE(e.loc, nullptr);
  }
  int found = 0;
  for (int i = 0; i < kThreads; ++i) {
    const ThreadEvents* te = FindThread(threads, "recorder-mt-" + std::to_string(i));
    ASSERT_NE(te, nullptr);
    EXPECT_EQ(te->events.size(), static_cast<size_t>(kEvents));
    EXPECT_EQ(te->dropped, 0u);
    ++found;
  }
  EXPECT_EQ(found, kThreads);
}

TEST(Recorder, ProfiledCallableRecordsUnderItsActionName) {
  auto epoch = BeginEpoch(64);
  ASSERT_TRUE(epoch.ok());
  SetThreadName("recorder-test-wrap");
  SetRecording(true);
  auto add = Profiled(
      "[Math].add", [](int a, int b) { return a + b; }, ActionKind::kStep);
  EXPECT_EQ(add(2, 3), 5);
  EXPECT_EQ(add(4, 5), 9);
  SetRecording(false);
  auto threads = Collect(*epoch);
  EndEpoch(*epoch);
  const ThreadEvents* me = FindThread(threads, "recorder-test-wrap");
  ASSERT_NE(me, nullptr);
  ASSERT_EQ(me->events.size(), 2u);
  EXPECT_STREQ(me->events[0].loc->name, "[Math].add");
  EXPECT_EQ(me->events[0].loc->kind, ActionKind::kStep);
  EXPECT_EQ(InternAction("[Math].add", ActionKind::kStep), me->events[0].loc);
}

TEST(Recorder, EventsAfterEndEpochAreIgnored) {
  auto epoch = BeginEpoch(64);
  ASSERT_TRUE(epoch.ok());
  EndEpoch(*epoch);
  SetRecording(true);  // even if someone turns it on, no epoch means no buffer
  Nested();
  SetRecording(false);
  EXPECT_TRUE(Collect(*epoch).empty());
}

}  // namespace
}  // namespace trainprof::record
