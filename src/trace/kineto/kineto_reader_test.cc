#include "trace/kineto/kineto_reader.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "trace/kineto/json_scanner.h"
#include "trace/kineto/json_structural.h"
#include "trace/trace_files.h"
#include "util/diagnostics.h"
#include "util/golden.h"
#include "util/gzip.h"

namespace trainprof::trace {
namespace {

const char* kSmall =
    R"J({"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": 5, "world_size": 8},
 "deviceProperties": [{"id": 0, "name": "NVIDIA A100", "totalGlobalMem": 42505273344, "computeMajor": 8, "computeMinor": 0, "numSms": 108}],
 "traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 10, "tid": 11, "ts": 1000.5, "dur": 100.25},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 11, "ts": 1010.125, "dur": 5, "args": {"correlation": 77, "External id": 9}},
  {"ph": "s", "cat": "ac2g", "id": 77, "pid": 10, "tid": 11, "ts": 1010.125, "name": "ac2g"},
  {"ph": "X", "cat": "kernel", "name": "void k\u00e9rnel<\"x\">", "pid": 0, "tid": 7, "ts": 1020.0004, "dur": 30.0006,
   "args": {"correlation": 77, "stream": 7, "device": 0, "blocks per SM": 0.5, "est. achieved occupancy %": 25, "grid": [1, 2, 1]}},
  {"ph": "f", "cat": "ac2g", "id": 77, "pid": 0, "tid": 7, "ts": 1020, "name": "ac2g", "bp": "e"},
  {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": "PyTorch Profiler", "ts": 900, "dur": 500}
 ]})J";

// Kineto writes microseconds with three decimals; anything finer is rounded half away from
// zero, and an exponent goes through from_chars.
TEST(MicrosToNs, PlainAndExponentForms) {
  EXPECT_EQ(json::MicrosToNs("12"), 12000);
  EXPECT_EQ(json::MicrosToNs("1.5"), 1500);
  EXPECT_EQ(json::MicrosToNs("1700000000123456.789"), 1700000000123456789);
  EXPECT_EQ(json::MicrosToNs("17000000001234567.5"), std::nullopt);  // past 16 digits
  EXPECT_EQ(json::MicrosToNs("1.2345"), 1235);
  EXPECT_EQ(json::MicrosToNs("1.2344"), 1234);
  EXPECT_EQ(json::MicrosToNs("-2.0005"), -2001);
  EXPECT_EQ(json::MicrosToNs("1e3"), 1000000);
  EXPECT_EQ(json::MicrosToNs("2.5E-1"), 250);
  EXPECT_EQ(json::MicrosToNs("NaN"), std::nullopt);
  EXPECT_EQ(json::MicrosToNs("-Infinity"), std::nullopt);
  EXPECT_EQ(json::MicrosToNs("1.5x"), std::nullopt);
  EXPECT_EQ(json::MicrosToNs("1234567812345678"), 1234567812345678000);  // two 8-digit blocks
  EXPECT_EQ(json::MicrosToNs("12345678a"), std::nullopt);
}

// Digits are read eight, then four, at a time where they are there: every length gives what
// from_chars gives, and a byte just outside '0'..'9' at any place sends the text to the general
// path.
TEST(ToInt, EveryLengthAndForm) {
  const std::string digits = "9081726354453627180";
  for (size_t n = 1; n <= digits.size(); ++n) {
    for (const std::string& t : {digits.substr(0, n), "-" + digits.substr(0, n)}) {
      int64_t want = 0;
      std::from_chars(t.data(), t.data() + t.size(), want);
      EXPECT_EQ(json::ToInt(t), want) << t;
    }
    for (size_t bad = 0; bad < n; ++bad) {
      std::string t = digits.substr(0, n);
      t[bad] = '/';  // the byte below '0'
      EXPECT_EQ(json::ToInt(t), json::ToIntSlow(t)) << t;
      t[bad] = ':';  // the byte above '9'
      EXPECT_EQ(json::ToInt(t), json::ToIntSlow(t)) << t;
    }
  }
  EXPECT_EQ(json::ToInt("18446744073709551615"), -1);  // an unsigned id: the same 64 bits
  EXPECT_EQ(json::ToInt("-"), std::nullopt);
  EXPECT_EQ(json::ToInt(""), std::nullopt);
}

// Metadata numbers past int64 arrive as floats: such a rank is as if absent (the file name's
// rank, or none), and a float that is a whole number is that number.
TEST(KinetoReader, MetadataNumbersOutOfRangeAreAbsent) {
  const char* kEvent = R"J(], "traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a",
      "pid": 1, "tid": 1, "ts": 1, "dur": 1}]})J";
  auto huge = ParseTrace(std::string(R"J({"distributedInfo": {"rank": 888888888888888888888881,
      "world_size": 2}, "deviceProperties": [{"id": 0, "numSms": 1e30})J") +
                             kEvent,
                         "h.json");
  ASSERT_TRUE(huge.ok()) << huge.status().message();
  EXPECT_NE(huge->rank_source, "distributedInfo");
  EXPECT_EQ(huge->world_size, 2);
  ASSERT_EQ(huge->devices.size(), 1u);
  EXPECT_EQ(huge->devices[0].num_sms, 0);
  auto whole = ParseTrace(std::string(R"J({"distributedInfo": {"rank": 3.0}, "deviceProperties": [
      {"id": 0, "numSms": 132.0})J") +
                              kEvent,
                          "w.json");
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  EXPECT_EQ(whole->rank, 3);
  EXPECT_EQ(whole->rank_source, "distributedInfo");
  EXPECT_EQ(whole->devices[0].num_sms, 132);
}

TEST(KinetoReader, ReadsEventsExactlyWithMetadata) {
  auto m = ParseTrace(kSmall, "small.json");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->rank, 5);
  EXPECT_EQ(m->rank_source, "distributedInfo");
  EXPECT_EQ(m->world_size, 8);
  EXPECT_EQ(m->backend, "nccl");
  ASSERT_EQ(m->devices.size(), 1u);
  EXPECT_EQ(m->devices[0].num_sms, 108);
  EXPECT_EQ(m->devices[0].compute_major, 8);
  ASSERT_EQ(m->size(), 4u);
  EXPECT_EQ(m->ts_ns[0], 1000500);
  EXPECT_EQ(m->dur_ns[0], 100250);
  EXPECT_EQ(m->ts_ns[2], 1020000);  // 0.0004 µs rounds to 0 ns
  EXPECT_EQ(m->dur_ns[2], 30001);   // 0.0006 µs rounds up to 1 ns
  EXPECT_EQ(m->name_of(2), "void k\xc3\xa9rnel<\"x\">");
  EXPECT_EQ(m->kind[2], EventKind::kKernel);
  EXPECT_EQ(m->stream_of(2), 7);
  EXPECT_FLOAT_EQ(m->blocks_per_sm_of(2), 0.5f);
  EXPECT_FLOAT_EQ(m->occupancy_pct_of(2), 25.0f);
  EXPECT_EQ(m->launcher[2], 1);  // the cudaLaunchKernel with correlation 77
  EXPECT_EQ(m->external_id[1], 9);
  EXPECT_EQ(m->kind[3], EventKind::kSpan);
  EXPECT_GE(m->pid_of(3), TraceModel::kStringIdBase);
  EXPECT_TRUE(m->diagnostics.empty());
}

// The model keeps durations and ids in 4 bytes with wider values aside, and the place of each
// event as a shared track: both must give back exactly what the file says.
TEST(KinetoReader, WideDurationsAndIdsAndSharedTracksReadBackExactly) {
  auto m = ParseTrace(R"J({"traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "long", "pid": 1, "tid": 2, "ts": 0, "dur": 5000000.5,
   "args": {"External id": 9007199254740993}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 2, "ts": 1,
   "dur": 1, "args": {"correlation": -2147483648}},
  {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 2, "dur": 1,
   "args": {"correlation": -2147483648, "stream": 7, "device": 0, "blocks per SM": 2}},
  {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 4, "dur": 1,
   "args": {"correlation": 2147483647, "stream": 7, "device": 0}}]})J",
                      "wide.json");
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m->size(), 4u);
  EXPECT_EQ(m->dur_ns[0], 5'000'000'500);  // 5 s: wider than 32 bits of ns
  EXPECT_EQ(m->external_id[0], 9007199254740993);
  EXPECT_EQ(m->correlation[1], -2147483648);  // the narrow form's own marker value
  EXPECT_EQ(m->correlation[3], 2147483647);
  EXPECT_EQ(m->launcher[2], 1);
  EXPECT_EQ(m->tracks.size(), 2u);  // (1, 2) and GPU 0 stream 7
  EXPECT_EQ(m->track[2], m->track[3]);
  EXPECT_EQ(m->stream_of(3), 7);
  EXPECT_FLOAT_EQ(m->blocks_per_sm_of(2), 2.0f);
  EXPECT_TRUE(std::isnan(m->blocks_per_sm_of(3)));
  EXPECT_TRUE(std::isnan(m->occupancy_pct_of(2)));
}

// Thread ids written as numbers in some events and as strings in others (seen in real traces):
// one thread, so operators nest and their times stay whole.
TEST(KinetoReader, AThreadIdAsNumberOrStringIsOneThread) {
  auto m = ParseTrace(R"J({"traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 1, "tid": 2, "ts": 0, "dur": 10},
  {"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": "1", "tid": "2", "ts": 1, "dur": 5},
  {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 1, "tid": "python", "ts": 2,
   "dur": 1}]})J",
                      "tids.json");
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m->size(), 3u);
  EXPECT_EQ(m->track[0], m->track[1]);
  EXPECT_NE(m->track[0], m->track[2]);  // a name stays a thread of its own
  EXPECT_EQ(m->tracks.size(), 2u);
}

// Each event starts with no field of the one before, also after an event that set more fields
// than the reader tracks one by one (here the same arg 60 times).
TEST(KinetoReader, AnEventKeepsNoFieldOfTheOneBefore) {
  std::string many;
  for (int k = 0; k < 60; ++k) many += fmt::format("\"correlation\": {}, ", 40 + k);
  auto m = ParseTrace(fmt::format(R"J({{"traceEvents": [
  {{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 2, "dur": 1,
    "args": {{{}"stream": 7, "device": 0, "blocks per SM": 2}}}},
  {{"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": 2, "ts": 3, "dur": 1}},
  {{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 4, "dur": 1,
    "args": {{"correlation": 5, "stream": 7, "device": 0, "blocks per SM": 4}}}},
  {{"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": 2, "ts": 5, "dur": 1}}]}})J",
                                  many),
                      "many.json");
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m->size(), 4u);
  EXPECT_EQ(m->correlation[0], 99);  // the last of the 60
  EXPECT_FLOAT_EQ(m->blocks_per_sm_of(0), 2.0f);
  for (size_t i : {1, 3}) {
    EXPECT_EQ(m->kind[i], EventKind::kCpuOp);
    EXPECT_EQ(m->correlation[i], kNone);
    EXPECT_TRUE(std::isnan(m->blocks_per_sm_of(i)));
  }
  EXPECT_EQ(m->correlation[2], 5);
  EXPECT_FLOAT_EQ(m->blocks_per_sm_of(2), 4.0f);
}

// torch without Kineto (Debian's 1.13) exports a bare array of operators with no "cat", all
// under the pid "CPU functions": they are cpu_ops, and the trace says what it lacks.
TEST(KinetoReader, LegacyProfilerExportIsOperators) {
  auto m = ParseTrace(
      R"J([{"name": "ProfilerStep#1", "ph": "X", "ts": 100, "dur": 50, "tid": 1,
            "pid": "CPU functions", "args": {}},
           {"name": "aten::mm", "ph": "X", "ts": 110, "dur": 20, "tid": 1,
            "pid": "CPU functions", "args": {}}])J",
      "legacy.json");
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m->size(), 2u);
  EXPECT_EQ(m->kind[0], EventKind::kCpuOp);
  EXPECT_EQ(m->kind[1], EventKind::kCpuOp);
  ASSERT_EQ(m->diagnostics.size(), 2u);  // and rank_unknown
  bool legacy = false;
  for (const auto& d : m->diagnostics)
    if (d.name() == "torch_profiler_legacy") legacy = d.count == 2;
  EXPECT_TRUE(legacy);
}

TEST(KinetoReader, RankFromFileName) {
  EXPECT_EQ(RankFromFileName("rank-3.Jul_15.pt.trace.json"), 3);
  EXPECT_EQ(RankFromFileName("sampled_rank-1.json.gz"), 1);
  EXPECT_EQ(RankFromFileName("rank0.json"), 0);
  EXPECT_EQ(RankFromFileName("worker7.json"), -1);
  EXPECT_EQ(RankFromFileName("ranking_rank_12.json"), 12);
}

std::string ManyEvents(int n) {
  std::string s = "{\"traceEvents\": [\n";
  for (int i = 0; i < n; ++i) {
    s += "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::op_" + std::to_string(i % 7) +
         "\", \"pid\": 1, \"tid\": 2, \"ts\": " + std::to_string(1000 + i * 10) +
         ".125, \"dur\": 5, \"args\": {\"Input Dims\": [[2, 3], []], \"External id\": " +
         std::to_string(i) + "}}";
    s += i + 1 < n ? ",\n" : "\n";
  }
  return s + "]}\n";
}

std::string WriteFile(const std::string& dir, const std::string& name, const std::string& data) {
  std::string p = dir + "/" + name;
  std::ofstream(p, std::ios::binary) << data;
  return p;
}

TEST(KinetoReader, SmallChunksGiveTheSameModelAsOneRead) {
  std::string dir = testutil::FreshTempDir();
  std::string text = ManyEvents(2000);
  std::string plain = WriteFile(dir, "rank2.json", text);
  std::string gz = WriteFile(dir, "rank2.json.gz", testutil::GzipText(text));
  ReadOptions small;
  small.chunk_bytes = 4096;  // events straddle chunk ends many times
  int64_t last_progress = -1;
  small.progress = [&](int64_t b) { last_progress = b; };
  auto a = ReadTraceFile(plain, small);
  auto b = ReadTraceFile(gz, {});
  auto c = ParseTrace(text, "mem");
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(last_progress, static_cast<int64_t>(text.size()));
  EXPECT_EQ(a->rank, 2);
  EXPECT_EQ(a->rank_source, "file name");
  ASSERT_EQ(a->size(), 2000u);
  EXPECT_EQ(a->ts_ns, b->ts_ns);
  EXPECT_EQ(a->ts_ns, c->ts_ns);
  EXPECT_EQ(a->external_id, b->external_id);
  EXPECT_EQ(a->ts_ns[1999], (1000 + 19990) * 1000 + 125);
  EXPECT_EQ(a->json_bytes, static_cast<int64_t>(text.size()));
}

TEST(KinetoReader, EveryCutKeepsTheEventsBeforeIt) {
  std::string text = ManyEvents(6);
  // From just after the first complete event to just before the end.
  for (size_t cut = text.find("}},") + 3; cut < text.size() - 3; ++cut) {
    auto m = ParseTrace(std::string_view(text).substr(0, cut), "cut.json");
    ASSERT_TRUE(m.ok()) << "cut at " << cut << ": " << m.status().message();
    // Events whose closing brace lies before the cut (and a separator after) are all kept.
    size_t complete = 0;
    for (size_t p = text.find("}},", 0); p != std::string::npos && p + 3 <= cut;
         p = text.find("}},", p + 1))
      ++complete;
    EXPECT_GE(m->size(), complete) << "cut at " << cut;
    EXPECT_NE(testutil::FindDiagnostic(m->diagnostics, "truncated"), nullptr) << "cut at " << cut;
  }
}

TEST(KinetoReader, TruncatedGzipKeepsEvents) {
  std::string dir = testutil::FreshTempDir();
  std::string gz = testutil::GzipText(ManyEvents(3000));
  std::string p = WriteFile(dir, "cut.json.gz", gz.substr(0, gz.size() / 2));
  auto m = ReadTraceFile(p, {});
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_GT(m->size(), 100u);
  EXPECT_LT(m->size(), 3000u);
  EXPECT_TRUE(m->truncated);
  const base::Diagnostic* d = testutil::FindDiagnostic(m->diagnostics, "truncated");
  ASSERT_NE(d, nullptr);
  EXPECT_NE(d->message.find("the compressed stream is cut short"), std::string::npos);
}

TEST(KinetoReader, PerEventProblemsAreCountedNotFatal) {
  const char* t = R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "ok", "pid": 1, "tid": 1, "ts": 10, "dur": 1},
    {"ph": "X", "cat": "cpu_op", "name": "no dur", "pid": 1, "tid": 1, "ts": 10},
    {"ph": "X", "cat": "cpu_op", "name": "negative", "pid": 1, "tid": 1, "ts": 10, "dur": -4},
    {"ph": "X", "cat": "cpu_op", "name": "nan", "pid": 1, "tid": 1, "ts": 10, "dur": NaN},
    {"ph": "X", "cat": "mystery", "name": "odd", "pid": 1, "tid": 1, "ts": 10, "dur": 1},
    {"cat": "cpu_op", "name": "no ph", "ts": 1},
    {"ph": "f", "cat": "ac2g", "id": 999, "pid": 1, "tid": 1, "ts": 3}
  ]})";
  auto m = ParseTrace(t, "bad_events.json");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->size(), 2u);  // "ok" and "odd"
  std::map<std::string, int64_t> diag;
  for (const auto& d : m->diagnostics) diag[std::string(d.name())] = d.count;
  EXPECT_EQ(diag["missing_fields"], 2);
  EXPECT_EQ(diag["bad_time"], 2);
  EXPECT_EQ(diag["unknown_category"], 1);
  EXPECT_EQ(diag["unpaired_flows"], 1);
  EXPECT_EQ(diag["rank_unknown"], 1);
}

TEST(KinetoReader, MemoryPeakFromBytesDeltasWhenThereIsNoTotal) {
  // GPU 0 has only Bytes changes, written out of time order (Kineto groups them by thread). In
  // time order +100, +300, -250, +200 give 100, 400, 150, 350: the peak is 400; summed in file
  // order (-250, +100, +200, +300) they would peak at 350. The CPU (-1) has Total Allocated,
  // which is kept as it is.
  const char* t = R"({"traceEvents": [
    {"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": 30, "args": {"Device Id": 0, "Bytes": -250}},
    {"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": 10, "args": {"Device Id": 0, "Bytes": 100}},
    {"ph": "i", "name": "[memory]", "pid": 1, "tid": 2, "ts": 40, "args": {"Device Id": 0, "Bytes": 200}},
    {"ph": "i", "name": "[memory]", "pid": 1, "tid": 2, "ts": 20, "args": {"Device Id": 0, "Bytes": 300}},
    {"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": 5, "args": {"Device Id": -1, "Bytes": 64, "Total Allocated": 1064}},
    {"ph": "X", "cat": "cpu_op", "name": "ok", "pid": 1, "tid": 1, "ts": 10, "dur": 1}
  ]})";
  auto m = ParseTrace(t, "deltas.json");
  ASSERT_TRUE(m.ok()) << m.status().message();
  std::map<int64_t, int64_t> peaks(m->peak_allocated_bytes.begin(), m->peak_allocated_bytes.end());
  EXPECT_EQ(peaks[0], 400);
  EXPECT_EQ(peaks[-1], 1064);
  int rebuilt = 0;
  for (const auto& d : m->diagnostics) {
    if (d.id != base::DiagnosticId::kMemoryFromDeltas) continue;
    ++rebuilt;
    EXPECT_NE(d.message.find("GPU 0 memory peak was rebuilt"), std::string::npos) << d.message;
  }
  EXPECT_EQ(rebuilt, 1);
}

// HTA's counter analyses: a copy's and a set's "memory bandwidth (GB/s)" (a set's bytes too),
// and the CUPTI metrics of a cuda_profiler_range (args named like "unit__counter.rollup"),
// whatever arg they follow; another event's unknown args are not kept.
TEST(KinetoReader, KeepsBandwidthAndRangeCounters) {
  const char* t = R"J({"traceEvents": [
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "pid": 0, "tid": 7, "ts": 1, "dur": 2,
     "args": {"stream": 7, "device": 0, "bytes": 8, "memory bandwidth (GB/s)": 0.5}},
    {"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": 0, "tid": 7, "ts": 4,
     "dur": 1, "args": {"stream": 7, "device": 0, "bytes": 16, "memory bandwidth (GB/s)": 2}},
    {"ph": "X", "cat": "cuda_profiler_range", "name": "k", "pid": 0, "tid": 0, "ts": 9, "dur": 5,
     "args": {"sm__cycles.sum": 12, "note": 3, "smsp__inst.sum": 1.5e3}},
    {"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": 1, "ts": 1, "dur": 1,
     "args": {"Fwd thread id": 0}}
  ]})J";
  auto m = ParseTrace(t, "counters.json");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->MemoryBwOf(0), 0.5);
  EXPECT_EQ(m->MemoryBwOf(1), 2.0);
  EXPECT_TRUE(std::isnan(m->MemoryBwOf(3)));
  EXPECT_EQ(m->MemcpyBytesOf(1), 16);
  ASSERT_EQ(m->range_counters.size(), 2u);
  EXPECT_EQ(m->range_counters[0].event, 2u);
  EXPECT_EQ(m->names[m->range_counters[0].name], "sm__cycles.sum");
  EXPECT_EQ(m->range_counters[0].value, 12);
  EXPECT_EQ(m->names[m->range_counters[1].name], "smsp__inst.sum");
  EXPECT_EQ(m->range_counters[1].value, 1500);
}

// The args the Memory, MFU and Operator views read: each [memory] event whole, a cpu_op's
// Input Dims, Input type and Call stack (an empty stack is none), a memcpy's bytes.
TEST(KinetoReader, KeepsMemoryEventsShapesStacksAndCopyBytes) {
  const char* t = R"J({"traceEvents": [
    {"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 2, "ts": 7,
     "args": {"Total Reserved": 4096, "Total Allocated": 1536, "Bytes": 512, "Addr": 140000000000, "Device Id": 3, "Device Type": 1}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 5, "dur": 4,
     "args": {"Input Dims": [[2, 3], [3, 4]], "Input type": ["float", "float"], "Call stack": "a.py(1): f;b.py(2): g"}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 1, "tid": 2, "ts": 10, "dur": 1,
     "args": {"Call stack": ""}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 2, "ts": 12, "dur": 1,
     "args": {"Call stack": "c.py(3): h"}},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pinned -> Device)", "pid": 0, "tid": 7, "ts": 20, "dur": 2,
     "args": {"device": 0, "stream": 7, "bytes": 1048576}}
  ]})J";
  auto m = ParseTrace(t, "args.json");
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m->memory_events.size(), 1u);
  const MemoryEvent& e = m->memory_events[0];
  EXPECT_EQ(e.ts_ns, 7000);
  EXPECT_EQ(e.bytes, 512);
  EXPECT_EQ(e.total_allocated, 1536);
  EXPECT_EQ(e.total_reserved, 4096);
  EXPECT_EQ(e.addr, 140000000000u);
  EXPECT_EQ(e.device_id, 3);
  EXPECT_EQ(e.device_type, 1);
  EXPECT_EQ(m->tracks[e.track].tid, 2);
  ASSERT_EQ(m->op_inputs.size(), 2u);  // relu's empty stack is no entry
  const OpInputs* mm = m->InputsOf(0);
  ASSERT_NE(mm, nullptr);
  EXPECT_EQ(m->names[mm->dims], "[[2, 3], [3, 4]]");
  EXPECT_EQ(m->names[mm->types], R"(["float", "float"])");
  EXPECT_EQ(m->names[mm->stack], "a.py(1): f;b.py(2): g");
  EXPECT_EQ(m->InputsOf(1), nullptr);
  const OpInputs* add = m->InputsOf(2);
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->dims, kNoName);
  EXPECT_EQ(m->names[add->stack], "c.py(3): h");
  EXPECT_EQ(m->MemcpyBytesOf(3), 1048576);
  EXPECT_EQ(m->MemcpyBytesOf(0), kNone);
}

// "Concrete Inputs" is kept for convolutions (their stride and padding), not for other calls.
TEST(KinetoReader, KeepsConcreteInputsOfConvolutionsOnly) {
  const char* t = R"J({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::conv2d", "pid": 1, "tid": 2, "ts": 5, "dur": 4,
     "args": {"Input Dims": [[8, 3, 32, 32], [16, 3, 3, 3], [], [], [], [], []],
              "Concrete Inputs": ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "1"]}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 2, "ts": 10, "dur": 1,
     "args": {"Input Dims": [[2], [2], []], "Concrete Inputs": ["", "", "1"]}}
  ]})J";
  auto m = ParseTrace(t, "concrete.json");
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m->op_inputs.size(), 2u);
  EXPECT_EQ(m->names[m->InputsOf(0)->concrete],
            R"(["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "1"])");
  EXPECT_EQ(m->InputsOf(1)->concrete, kNoName);
}

// Fatal errors: one line naming the file, the byte, line and column.
struct BadCase {
  const char* name;
  std::string text;
  const char* message;
};

TEST(KinetoReader, FatalErrorsNameFileAndPlace) {
  const BadCase cases[] = {
      {"not_json", "hello",
       "x.json: byte 0 (line 1, column 1): not JSON: a trace starts with '{' or '['"},
      {"not_a_trace", "{\"a\": [1, 2]}\n",
       "x.json: byte 14 (line 2, column 1): not a trace: valid JSON but no \"traceEvents\" array"},
      {"empty", "", "x.json: byte 0 (line 1, column 1): the file is empty"},
      {"blank", "  \n ", "x.json: byte 4 (line 2, column 2): the file holds only white space"},
      {"bad_token", "{\"traceEvents\": [\n {\"ph\": X}]}",
       "x.json: byte 26 (line 2, column 9): not JSON: unexpected character"},
      {"events_not_array", "{\"traceEvents\": 3}",
       "x.json: byte 16 (line 1, column 17): \"traceEvents\" is not an array"},
      {"cut_before_events", "{\"schemaVersion\": 1, \"traceEv",
       "x.json: byte 20 (line 1, column 21): the JSON is cut short before the first event "
       "(truncated file)"},
      {"garbage_after", "{\"traceEvents\": []} x",
       "x.json: byte 20 (line 1, column 21): unexpected data after the end of the JSON document"},
  };
  for (const BadCase& c : cases) {
    auto m = ParseTrace(c.text, "x.json");
    ASSERT_FALSE(m.ok()) << c.name;
    EXPECT_EQ(m.status().message(), c.message) << c.name;
  }
}

// Deep in a file read through a small window (lines counted over many refills, in 32-byte
// blocks and byte by byte): the line and column are those of the text.
TEST(KinetoReader, ErrorsDeepInAFileNameTheirLine) {
  std::string text = ManyEvents(3000);
  const size_t at = text.find("\"ph\": \"X\"", text.size() * 5 / 6);
  text.replace(at, 9, "\"ph\" \"X\"");
  const size_t bad = at + 5;  // the '"' where ':' should be
  const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<long>(bad), '\n');
  const size_t column = bad - text.rfind('\n', bad);
  const std::string where =
      fmt::format("byte {} (line {}, column {}): expected ':' after a key", bad, line, column);
  std::string dir = testutil::FreshTempDir();
  ReadOptions small;
  small.chunk_bytes = 4096;
  for (auto m :
       {ParseTrace(text, "x.json"), ReadTraceFile(WriteFile(dir, "x.json", text), small)}) {
    ASSERT_FALSE(m.ok());
    EXPECT_NE(m.status().message().find(where), std::string::npos) << m.status().message();
  }
}

TEST(KinetoReader, CorruptGzipIsFatalWithItsOffset) {
  std::string dir = testutil::FreshTempDir();
  std::string gz = testutil::GzipText(ManyEvents(200));
  for (size_t i = 40; i < 60; ++i) gz[i] = static_cast<char>(gz[i] ^ 0x5a);
  std::string p = WriteFile(dir, "bad.json.gz", gz);
  auto m = ReadTraceFile(p, {});
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("bad.json.gz: compressed byte "), std::string::npos)
      << m.status().message();
  EXPECT_NE(m.status().message().find("corrupt gzip data"), std::string::npos);
}

// Wrong answer 8 of the "analyze you can trust" issue: one giant value must not take the memory.
// A value larger than max_unit_bytes is streamed past, unread; the events around it survive.
TEST(KinetoReader, OversizedValuesAreSkippedAndTheRestKept) {
  std::string dir = testutil::FreshTempDir();
  std::string big(size_t{3} << 20, 'x');
  for (size_t i = 1000; i < big.size(); i += 100000) big.replace(i, 4, "\\\"{[");
  std::string text = R"({"bigKey": ")" + big + R"(", "traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "before", "pid": 1, "tid": 1, "ts": 1, "dur": 2},
    {"ph": "X", "cat": "cpu_op", "name": ")" +
                     big + R"(", "pid": 1, "tid": 1, "ts": 3, "dur": 1},
    {"ph": "X", "cat": "cpu_op", "name": "after", "pid": 1, "tid": 1, "ts": 5, "dur": 2}],
    "distributedInfo": {"rank": 3}})";
  ReadOptions o;
  o.chunk_bytes = 64 << 10;
  o.max_unit_bytes = 1 << 20;
  for (const std::string& path : {WriteFile(dir, "big.json", text),
                                  WriteFile(dir, "big.json.gz", testutil::GzipText(text))}) {
    auto m = ReadTraceFile(path, o);
    ASSERT_TRUE(m.ok()) << m.status().message();
    ASSERT_EQ(m->size(), 2u) << path;
    EXPECT_EQ(m->name_of(0), "before");
    EXPECT_EQ(m->name_of(1), "after");
    EXPECT_EQ(m->rank, 3) << "metadata after the skipped values is read";
    const base::Diagnostic* d = testutil::FindDiagnostic(m->diagnostics, "oversized_value");
    ASSERT_NE(d, nullptr) << path;
    EXPECT_EQ(d->count, 2);
    EXPECT_NE(d->message.find("larger than 1 MiB"), std::string::npos) << d->message;
    EXPECT_EQ(testutil::FindDiagnostic(m->diagnostics, "truncated"), nullptr);
  }
  // Cut inside the giant value: the events before it are kept, and the cut is said.
  auto cut = ReadTraceFile(WriteFile(dir, "cut.json", text.substr(0, text.size() / 2)), o);
  ASSERT_TRUE(cut.ok()) << cut.status().message();
  EXPECT_EQ(cut->size(), 1u);
  EXPECT_NE(testutil::FindDiagnostic(cut->diagnostics, "truncated"), nullptr);
}

TEST(TraceFiles, FolderListingAndDuplicateRanks) {
  std::string dir = testutil::FreshTempDir();
  EXPECT_FALSE(ListTraceFiles(dir).ok());
  EXPECT_EQ(ListTraceFiles(dir).status().message(),
            dir +
                ": no trace files in this folder (looked for PyTorch profiler traces (JSON, plain "
                "or gzip) and Nsight Systems SQLite exports by their contents)");
  WriteFile(dir, "a_rank1.json", ManyEvents(3));
  WriteFile(dir, "b_rank1.json", ManyEvents(4));
  WriteFile(dir, "c_rank0.pt.trace.json.gz", testutil::GzipText(ManyEvents(5)));
  WriteFile(dir, "report.json", "{}");
  WriteFile(dir, "notes.txt", "x");
  auto files = ListTraceFiles(dir);
  ASSERT_TRUE(files.ok());
  ASSERT_EQ(files->size(), 3u);
  auto models = ReadTraceFiles(*files, {});
  ASSERT_TRUE(models.ok()) << models.status().message();
  ASSERT_EQ(models->size(), 3u);
  EXPECT_EQ((*models)[0].rank, 0);
  EXPECT_EQ((*models)[1].rank, 1);
  EXPECT_EQ((*models)[2].rank, 1);
  for (int i : {1, 2}) {
    ASSERT_FALSE((*models)[i].diagnostics.empty());
    EXPECT_EQ((*models)[i].diagnostics.back().id, base::DiagnosticId::kDuplicateRank);
  }
  EXPECT_FALSE(ListTraceFiles(dir + "/missing").ok());
}

}  // namespace
}  // namespace trainprof::trace

namespace trainprof::trace {
namespace {

// A pid or tid as written: string ids are name ids, which differ with the order names were met.
std::string IdText(const TraceModel& m, int64_t id) {
  if (id < TraceModel::kStringIdBase) return std::to_string(id);
  return m.names[static_cast<uint32_t>(id - TraceModel::kStringIdBase)];
}

void ExpectSameModel(const TraceModel& a, const TraceModel& b) {
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(a.ts_ns, b.ts_ns);
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.launcher, b.launcher);
  EXPECT_EQ(a.rank, b.rank);
  EXPECT_EQ(a.base_time_ns, b.base_time_ns);
  EXPECT_EQ(a.json_bytes, b.json_bytes);
  EXPECT_EQ(a.truncated, b.truncated);
  EXPECT_EQ(a.peak_allocated_bytes, b.peak_allocated_bytes);
  EXPECT_EQ(a.memcpy_bytes, b.memcpy_bytes);
  ASSERT_EQ(a.memory_events.size(), b.memory_events.size());
  for (size_t i = 0; i < a.memory_events.size(); ++i) {
    const MemoryEvent &x = a.memory_events[i], &y = b.memory_events[i];
    ASSERT_EQ(x.ts_ns, y.ts_ns);
    ASSERT_EQ(x.bytes, y.bytes);
    ASSERT_EQ(x.total_allocated, y.total_allocated);
    ASSERT_EQ(x.addr, y.addr);
    ASSERT_EQ(x.device_id, y.device_id);
    ASSERT_EQ(IdText(a, a.tracks[x.track].tid), IdText(b, b.tracks[y.track].tid));
  }
  ASSERT_EQ(a.op_inputs.size(), b.op_inputs.size());
  for (size_t i = 0; i < a.op_inputs.size(); ++i) {
    const uint32_t e = a.op_inputs[i].first;
    ASSERT_EQ(e, b.op_inputs[i].first);
    auto text = [](const TraceModel& m, uint32_t id) {
      return id == kNoName ? std::string("(none)") : std::string(m.names[id]);
    };
    for (auto field : {&OpInputs::dims, &OpInputs::types, &OpInputs::stack, &OpInputs::concrete})
      ASSERT_EQ(text(a, a.InputsOf(e)->*field), text(b, b.InputsOf(e)->*field));
  }
  for (size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE(i);
    ASSERT_EQ(a.name_of(i), b.name_of(i));
    ASSERT_EQ(a.dur_ns[i], b.dur_ns[i]);
    ASSERT_EQ(a.correlation[i], b.correlation[i]);
    ASSERT_EQ(a.external_id[i], b.external_id[i]);
    ASSERT_EQ(a.device_of(i), b.device_of(i));
    ASSERT_EQ(a.stream_of(i), b.stream_of(i));
    ASSERT_EQ(IdText(a, a.tid_of(i)), IdText(b, b.tid_of(i)));
    ASSERT_EQ(IdText(a, a.pid_of(i)), IdText(b, b.pid_of(i)));
    float x = a.blocks_per_sm_of(i), y = b.blocks_per_sm_of(i);
    ASSERT_TRUE(x == y || (std::isnan(x) && std::isnan(y)));
  }
  ASSERT_EQ(a.diagnostics.size(), b.diagnostics.size());
  for (size_t i = 0; i < a.diagnostics.size(); ++i) {
    EXPECT_EQ(a.diagnostics[i].id, b.diagnostics[i].id);
    EXPECT_EQ(a.diagnostics[i].count, b.diagnostics[i].count);
    EXPECT_EQ(a.diagnostics[i].message, b.diagnostics[i].message);
  }
}

// A trace whose metadata comes after its events, with string tids, flows, memory events, odd
// strings, and (with `trap`) a long string full of "}, {" where a segment boundary is guessed.
std::string SegmentTrace(int events, bool trap) {
  std::string t = "{\"traceEvents\": [\n";
  for (int i = 0; i < events; ++i) {
    int corr = 1000 + i;
    t += fmt::format(
        "  {{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, "
        "\"tid\": {}, \"ts\": {}.5, \"dur\": 2, \"args\": {{\"correlation\": {}}}}},\n",
        i % 3 == 0 ? "\"worker\"" : "1", 10 * i, corr);
    t += fmt::format(
        "  {{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k{}\\t\", \"pid\": 0, \"tid\": 7, "
        "\"ts\": {}, \"dur\": 5, \"args\": {{\"correlation\": {}, \"stream\": 7, \"device\": 0, "
        "\"blocks per SM\": {}}}}},\n",
        i % 17, 10 * i + 3, corr, i % 5);
    t += fmt::format(
        "  {{\"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"name\": \"[memory]\", \"pid\": 1, "
        "\"tid\": {}, \"ts\": {}, \"args\": {{\"Device Id\": 0, \"Bytes\": {}, \"Addr\": {}}}}},\n",
        i % 3 == 0 ? "\"worker\"" : "1", 10 * i + 1, i % 2 ? -256 : 512, i / 2);
    if (i % 10 == 0)  // shapes and copy bytes, in side tables the parts must merge
      t += fmt::format(
          "  {{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, \"tid\": 1, "
          "\"ts\": {}, \"dur\": 1, \"args\": {{\"Input Dims\": [[{}, 2], [2, 3]], \"Input type\": "
          "[\"float\", \"float\"]}}}},\n  {{\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": "
          "\"Memcpy HtoD\", \"pid\": 0, \"tid\": 7, \"ts\": {}, \"dur\": 1, \"args\": "
          "{{\"stream\": "
          "7, \"device\": 0, \"bytes\": {}}}}},\n",
          10 * i + 2, i % 7, 10 * i + 4, 1000 + i);
    if (trap && i == events / 2)
      for (int k = 0; k < 4; ++k) {
        std::string filler;
        for (int j = 0; j < 20000; ++j) filler += "}, {";
        t += "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"" + filler +
             "\", \"pid\": 1, \"tid\": 1, \"ts\": 5, \"dur\": 1},\n";
      }
  }
  t += "  {\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"bad\xff\", \"pid\": 1, "
       "\"tid\": 1, \"ts\": 0, \"dur\": 1}\n],\n";
  t += "\"distributedInfo\": {\"rank\": 3}, \"baseTimeNanoseconds\": 1700000000000000000}\n";
  return t;
}

StatusOr<TraceModel> ReadWith(const std::string& path, int threads) {
  ReadOptions o;
  o.threads = threads;
  o.min_segment_bytes = 4096;
  return ReadTraceFile(path, o);
}

// A file of the running test's own: ctest -j runs tests in parallel processes, so two tests
// writing one fixed name in TempDir() race.
std::string OwnFile(const std::string& name) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return testutil::RemoveAfterTest(
      fmt::format("{}/trainprof_{}_{}_{}", ::testing::TempDir(), getpid(), info->name(), name));
}

// The same text gzipped, inflated once and cut into parts of 2 KiB by the inflating thread.
StatusOr<TraceModel> ReadGzipWith(const std::string& text, int threads) {
  std::string path = OwnFile("segments.json.gz");
  std::ofstream(path, std::ios::binary) << testutil::GzipText(text);
  ReadOptions o;
  o.threads = threads;
  o.min_segment_bytes = 4096;
  return ReadTraceFile(path, o);
}

// Parts of a big plain file are parsed on several threads: the model must be the one thread's,
// also when a guessed boundary falls inside a string, when the file is cut, or broken.
TEST(KinetoReader, SegmentsGiveTheSequentialModel) {
  for (bool trap : {false, true}) {
    SCOPED_TRACE(trap ? "a boundary guessed inside a string" : "clean boundaries");
    std::string path = OwnFile("segments.json");
    std::string text = SegmentTrace(3000, trap);
    std::ofstream(path, std::ios::binary) << text;
    auto one = ReadWith(path, 1);
    ASSERT_TRUE(one.ok()) << one.status().message();
    EXPECT_EQ(one->rank, 3);
    EXPECT_EQ(one->base_time_ns, 1700000000000000000);
    EXPECT_EQ(one->memory_events.size(), 3000u);
    EXPECT_EQ(one->memory_events[1].addr, 0u);  // i = 1: Addr 1 / 2
    EXPECT_EQ(one->memory_events[3].ts_ns, 1700000000000000000 + 31'000);
    EXPECT_EQ(one->op_inputs.size(), 300u);
    EXPECT_EQ(one->memcpy_bytes.size(), 300u);
    EXPECT_EQ(one->MemcpyBytesOf(one->memcpy_bytes[2].first), 1020);
    for (int threads : {2, 3, 7}) {
      SCOPED_TRACE(threads);
      auto many = ReadWith(path, threads);
      ASSERT_TRUE(many.ok()) << many.status().message();
      ExpectSameModel(*one, *many);
      // With the trap, the guesses at 1/2 and at 3/7, 4/7 lie in the "}, {" strings: caught,
      // and the file read by one thread; the guesses at 1/3 and 2/3 are outside them.
      EXPECT_EQ(many->read_segments, trap && threads != 3 ? 1 : threads);
    }
    // Gzipped: cut into parts as it is inflated, parsed by two and by three threads.
    auto gz_one = ReadGzipWith(text, 1), gz = ReadGzipWith(text, 2), gz3 = ReadGzipWith(text, 3);
    ASSERT_TRUE(gz_one.ok() && gz.ok() && gz3.ok()) << gz.status().message();
    ASSERT_EQ(gz->size(), one->size());
    ExpectSameModel(*gz_one, *gz);
    ExpectSameModel(*gz_one, *gz3);
    EXPECT_EQ(gz3->read_segments, gz->read_segments);
    // With the trap, a cut falls inside a "}, {" string: caught, and the file read again by one.
    if (trap)
      EXPECT_EQ(gz->read_segments, 1);
    else
      EXPECT_GT(gz->read_segments, 100);
    // Cut in the last third: the same events kept and the same "truncated" message.
    std::ofstream(path, std::ios::binary) << text.substr(0, text.size() * 5 / 6);
    auto cut_one = ReadWith(path, 1), cut_many = ReadWith(path, 3);
    ASSERT_TRUE(cut_one.ok() && cut_many.ok());
    EXPECT_TRUE(cut_many->truncated);
    EXPECT_EQ(cut_many->read_segments, 1);
    ExpectSameModel(*cut_one, *cut_many);
    auto cut_gz_one = ReadGzipWith(text.substr(0, text.size() * 5 / 6), 1);
    auto cut_gz = ReadGzipWith(text.substr(0, text.size() * 5 / 6), 2);
    ASSERT_TRUE(cut_gz_one.ok() && cut_gz.ok()) << cut_gz.status().message();
    EXPECT_TRUE(cut_gz->truncated);
    EXPECT_EQ(cut_gz->size(), cut_one->size());
    ExpectSameModel(*cut_gz_one, *cut_gz);
    // Broken in the last third: the same one-line error, with its line and column.
    std::string broken = text;
    broken.replace(broken.rfind("\"ph\": \"X\"", broken.size() * 5 / 6), 4, "\"ph\" \"X");
    std::ofstream(path, std::ios::binary) << broken;
    auto bad_one = ReadWith(path, 1), bad_many = ReadWith(path, 3);
    ASSERT_FALSE(bad_one.ok());
    ASSERT_FALSE(bad_many.ok());
    EXPECT_EQ(bad_one.status().message(), bad_many.status().message());
    auto bad_gz_one = ReadGzipWith(broken, 1), bad_gz = ReadGzipWith(broken, 2);
    ASSERT_FALSE(bad_gz_one.ok());
    ASSERT_FALSE(bad_gz.ok());
    EXPECT_EQ(bad_gz_one.status().message(), bad_gz.status().message());
    // Broken in the first half: the first parser's error, whatever the second half does.
    std::string early = text;
    early.replace(early.find("\"ph\": \"X\"", early.size() / 10), 4, "\"ph\" \"X");
    auto bad_early_one = ReadGzipWith(early, 1), bad_early = ReadGzipWith(early, 2);
    ASSERT_FALSE(bad_early.ok());
    EXPECT_EQ(bad_early.status().message(), bad_early_one.status().message());
  }
}

// Kineto writes "deviceProperties" (an array of objects, so full of "}, {") before the events: a
// gzip file's first cut is made after "traceEvents" starts, not among them.
TEST(KinetoReader, GzipPartsAreCutInTheEventsOnly) {
  std::string devices;
  for (int i = 0; i < 300; ++i)
    devices += fmt::format("{}{{\"id\": {}, \"name\": \"GPU {}\"}}", i ? ", " : "", i, i);
  std::string text = SegmentTrace(2000, false);
  text.replace(0, 1, "{\"schemaVersion\": 1, \"deviceProperties\": [" + devices + "],\n");
  auto one = ReadGzipWith(text, 1), two = ReadGzipWith(text, 2);
  ASSERT_TRUE(one.ok() && two.ok()) << two.status().message();
  ExpectSameModel(*one, *two);
  EXPECT_GT(two->read_segments, 50);
}

// --- The scalar and SIMD scanning paths --------------------------------------------------------

// Reads `path` once per scanning path; every model must be the scalar path's.
void ExpectSameModelOnEveryPath(const std::string& path, const ReadOptions& o) {
  json::SetSimdLevel(json::SimdLevel::kScalar);
  auto scalar = ReadTraceFile(path, o);
  for (json::SimdLevel level : {json::SimdLevel::kSse42, json::SimdLevel::kAvx2}) {
    SCOPED_TRACE(json::SimdLevelName(json::SetSimdLevel(level)));
    auto simd = ReadTraceFile(path, o);
    ASSERT_EQ(scalar.ok(), simd.ok()) << path;
    if (!scalar.ok()) {
      EXPECT_EQ(scalar.status().message(), simd.status().message());
      continue;
    }
    ExpectSameModel(*scalar, *simd);
    EXPECT_EQ(scalar->json_bytes, simd->json_bytes);
  }
  json::SetSimdLevel(json::SimdLevel::kAvx2);
}

// Strings with escapes, \u surrogates and brackets, across 64-byte blocks and window ends, in
// values large enough to be skipped unread (the path that scans 64 bytes at a time).
std::string EscapeHeavyTrace(int events) {
  std::string t = "{\"traceEvents\": [\n";
  for (int i = 0; i < events; ++i) {
    std::string odd(static_cast<size_t>(i % 130), '\\');
    if (i % 2 == 1) odd += "\\";  // always an even run: a backslash escaped
    t += fmt::format(
        "  {{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"op{}\\\"{}\\ud83d\\ude00]}}\", "
        "\"pid\": 1, \"tid\": 1, \"ts\": {}, \"dur\": 1, \"args\": {{\"big\": \"{}{}\", "
        "\"nest\": [[[{{\"a\": \"],\\\\\"}}]]]}}}},\n",
        i, odd, i * 10, std::string(static_cast<size_t>(2000 + 211 * (i % 50)), '{'), odd);
  }
  t += "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"last\", \"pid\": 1, \"tid\": 1, "
       "\"ts\": 1, \"dur\": 1}\n]}\n";
  return t;
}

TEST(KinetoReader, ScalarAndSimdPathsGiveTheSameModelOnGeneratedTraces) {
  std::string dir = testutil::FreshTempDir();
  ReadOptions tight;
  tight.chunk_bytes = 4096;
  tight.max_unit_bytes = 8192;  // the big args are skipped unread, in pieces
  const std::string escapes = EscapeHeavyTrace(300);
  for (const std::string& text : {ManyEvents(2000), SegmentTrace(3000, true), escapes}) {
    const std::string path = WriteFile(dir, "gen.json", text);
    ExpectSameModelOnEveryPath(path, {});
    ExpectSameModelOnEveryPath(path, tight);
  }
  auto m = ReadTraceFile(WriteFile(dir, "esc.json", escapes), tight);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->name_of(m->size() - 1), "last");
  ASSERT_NE(testutil::FindDiagnostic(m->diagnostics, "oversized_value"), nullptr);
}

TEST(KinetoReader, ScalarAndSimdPathsGiveTheSameModelOnSharedTraces) {
  TRAINPROF_SKIP_WITHOUT_SHARED_TRACES();
  int read = 0;
  const auto root = std::filesystem::path(testutil::SourceDir()) / ".." / "shared/data/traces";
  for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
    const std::string p = e.path().string();
    if (!e.is_regular_file() || p.find("/expected/") != std::string::npos ||
        (!p.ends_with(".json.gz") && !p.ends_with(".json")) || e.file_size() > (40u << 20))
      continue;
    SCOPED_TRACE(p);
    ExpectSameModelOnEveryPath(p, {});
    ++read;
  }
  EXPECT_GT(read, 5);
}

// Every cut of a trace whose events are skipped unread keeps the events before the cut, and the
// same ones on every path.
TEST(KinetoReader, EveryCutIsTheSameOnEveryPath) {
  std::string dir = testutil::FreshTempDir();
  const std::string text = EscapeHeavyTrace(3);
  ReadOptions tight;
  tight.chunk_bytes = 512;
  tight.max_unit_bytes = 1024;
  for (size_t cut = text.find("}},") + 3; cut < text.size() - 3; cut += 29) {
    SCOPED_TRACE(cut);
    const std::string path = WriteFile(dir, "cut.json", text.substr(0, cut));
    ExpectSameModelOnEveryPath(path, tight);
    auto m = ReadTraceFile(path, tight);
    ASSERT_TRUE(m.ok()) << m.status().message();
    EXPECT_GE(m->size(), 1u);
  }
}

}  // namespace
}  // namespace trainprof::trace
