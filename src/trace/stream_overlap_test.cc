// Overlapping GPU work on one stream (stream_overlap.h), on a hand-made trace.
#include "trace/stream_overlap.h"

#include <gtest/gtest.h>

#include "trace/kineto/kineto_reader.h"

namespace trainprof::trace {
namespace {

// Stream 7: a [0, 20) and b [15, 30) overlap by 5 us, c [25, 26) lies inside b (1 us); stream
// 8's d [10, 40) overlaps them in time but runs on another stream.
TEST(StreamOverlap, CountsWorkThatStartsBeforeEarlierWorkOnItsStreamEnds) {
  const char* json = R"({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "a", "pid": 0, "tid": 7, "ts": 0, "dur": 20,
     "args": {"stream": 7, "device": 0}},
    {"ph": "X", "cat": "kernel", "name": "d", "pid": 0, "tid": 8, "ts": 10, "dur": 30,
     "args": {"stream": 8, "device": 0}},
    {"ph": "X", "cat": "kernel", "name": "c", "pid": 0, "tid": 7, "ts": 25, "dur": 1,
     "args": {"stream": 7, "device": 0}},
    {"ph": "X", "cat": "kernel", "name": "b", "pid": 0, "tid": 7, "ts": 15, "dur": 15,
     "args": {"stream": 7, "device": 0}}]})";
  auto m = ParseTrace(json, "overlap.json");
  ASSERT_TRUE(m.ok()) << m.status().message();
  const StreamOverlap o = NoteStreamOverlaps(*m);
  EXPECT_EQ(o.events, 2);  // b (written after c: sorted by start) and c
  EXPECT_EQ(o.overlap_ns, 6'000);
  ASSERT_FALSE(m->diagnostics.empty());
  EXPECT_EQ(m->diagnostics.back().id, base::DiagnosticId::kKernelsOverlapOnStream);
  EXPECT_EQ(m->size(), 4u);  // nothing dropped
}

TEST(StreamOverlap, BackToBackWorkIsNoOverlap) {
  const char* json = R"({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "a", "pid": 0, "tid": 7, "ts": 0, "dur": 20,
     "args": {"stream": 7, "device": 0}},
    {"ph": "X", "cat": "kernel", "name": "b", "pid": 0, "tid": 7, "ts": 20, "dur": 5,
     "args": {"stream": 7, "device": 0}}]})";
  auto m = ParseTrace(json, "back_to_back.json");
  ASSERT_TRUE(m.ok());
  const size_t before = m->diagnostics.size();
  EXPECT_EQ(NoteStreamOverlaps(*m).events, 0);
  EXPECT_EQ(m->diagnostics.size(), before);
}

}  // namespace
}  // namespace trainprof::trace
