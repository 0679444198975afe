// The Nsight Systems reader on exports made here with known answers (the tables and columns of
// export schema 3.x that it reads), and its name rules.
#include "trace/nsys/nsys_reader.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "trace/input_kind.h"
#include "trace/nsys/nsys_names.h"
#include "trace/trace_files.h"
#include "util/golden.h"

namespace trainprof::trace {
namespace {

// Two processes (pid 144 on GPU 1, pid 145 on GPU 0), each with one thread that runs
// "aten::mm" (an emit_nvtx range with shapes) around a cudaLaunchKernel; pid 145 also copies 4 KiB
// to the device, launches through the driver inside an NCCL-domain range, and has an NVTX range
// that never ends.
constexpr const char* kSchema = R"sql(
CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
INSERT INTO StringIds VALUES (1, 'cudaLaunchKernel_v7000'), (2, 'cudaMemcpyAsync_v3020'),
  (3, 'sm90_gemm_kernel'), (4, 'gemm'), (5, 'cuLaunchKernelEx'), (6, 'ncclSend');
CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT);
INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (1000000000000, '');
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER, eventClass INTEGER,
  globalTid INTEGER, correlationId INTEGER, nameId INTEGER);
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES
  (1100, 1200, 0, (144 << 24) + 144, 7, 1),
  (1100, 1200, 0, (145 << 24) + 145, 7, 1),
  (1300, 1400, 0, (145 << 24) + 145, 8, 2),
  (1500, 1550, 1, (145 << 24) + 145, 9, 5);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER,
  streamId INTEGER, correlationId INTEGER, globalPid INTEGER, demangledName INTEGER,
  shortName INTEGER);
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES
  (2000, 5000, 1, 7, 7, 144 << 24, 3, 4),
  (2000, 3000, 0, 7, 7, 145 << 24, 3, 4),
  (6000, 6500, 0, 9, 9, 145 << 24, NULL, 4);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER, end INTEGER, deviceId INTEGER,
  streamId INTEGER, correlationId INTEGER, globalPid INTEGER, bytes INTEGER, copyKind INTEGER,
  srcKind INTEGER, dstKind INTEGER);
INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (3500, 3600, 0, 7, 8, 145 << 24, 4096, 1, 1, 2);
CREATE TABLE NVTX_EVENTS (start INTEGER, end INTEGER, eventType INTEGER, text TEXT,
  globalTid INTEGER, textId INTEGER, domainId INTEGER);
INSERT INTO NVTX_EVENTS VALUES
  (1000, 1250, 59, 'aten::mm, seq = 3, op_id = 11, sizes = [[2, 3], [3, 4]]', (144 << 24) + 144, NULL, 0),
  (1000, 1250, 59, 'aten::mm, seq = 3, op_id = 11, sizes = [[2, 3], [3, 4]]', (145 << 24) + 145, NULL, 0),
  (900, 1600, 59, 'ProfilerStep#5', (145 << 24) + 145, NULL, 0),
  (1450, 1560, 59, NULL, (145 << 24) + 145, 6, 1),
  (1700, NULL, 59, 'unfinished', (145 << 24) + 145, NULL, 0);
CREATE TABLE TARGET_INFO_GPU (id INTEGER, name TEXT, totalMemory INTEGER, smCount INTEGER,
  computeMajor INTEGER, computeMinor INTEGER, cuDevice INTEGER);
INSERT INTO TARGET_INFO_GPU VALUES (5, 'NVIDIA H100 80GB HBM3', 85000000000, 132, 9, 0, 0),
  (6, 'NVIDIA H100 80GB HBM3', 85000000000, 132, 9, 0, 1);
)sql";

std::string MakeExport(const std::string& dir, const std::string& name, const char* sql) {
  const std::string path = dir + "/" + name;
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
  return path;
}

size_t CountOfKind(const TraceModel& m, EventKind k) {
  size_t n = 0;
  for (size_t i = 0; i < m.size(); ++i) n += m.kind[i] == k;
  return n;
}

size_t FindEvent(const TraceModel& m, EventKind k, std::string_view name) {
  for (size_t i = 0; i < m.size(); ++i)
    if (m.kind[i] == k && m.name_of(i) == name) return i;
  ADD_FAILURE() << "no " << EventKindName(k) << " named " << name;
  return 0;
}

TEST(NsysNames, AsKinetoNamesThem) {
  EXPECT_EQ(RuntimeName("cudaLaunchKernel_v7000"), "cudaLaunchKernel");
  EXPECT_EQ(RuntimeName("cudaStreamGetCaptureInfo_v2_v11030"), "cudaStreamGetCaptureInfo_v2");
  EXPECT_EQ(RuntimeName("cudaStreamGetCaptureInfo_v2"), "cudaStreamGetCaptureInfo_v2");
  EXPECT_EQ(RuntimeName("cuLaunchKernelEx"), "cuLaunchKernelEx");
  EXPECT_EQ(MemcpyName(1, 1, 2), "Memcpy HtoD (Pinned -> Device)");
  EXPECT_EQ(MemcpyName(99, -1, 3), "Memcpy Unknown (Unknown -> Array)");
  EXPECT_EQ(MemsetName(2), "Memset (Device)");
  EXPECT_EQ(MemcpyName(1, 0, 2), "Memcpy HtoD (Pageable -> Device)");
}

TEST(NsysNames, EmitNvtxRangesAreOperatorsWithTheirShapes) {
  NvtxRange r = ParseNvtxRange(
      "aten::mm, seq = 4, op_id = 317, sizes = [[2, 3], [3, 4]], "
      "input_op_ids = [(316, 0)]");
  EXPECT_EQ(r.name, "aten::mm");
  EXPECT_EQ(r.sizes, "[[2, 3], [3, 4]]");
  EXPECT_TRUE(r.op);
  r = ParseNvtxRange("detach_, op_id = 990725");
  EXPECT_EQ(r.name, "detach_");
  EXPECT_TRUE(r.op);
  EXPECT_TRUE(r.sizes.empty());
  r = ParseNvtxRange("forward, step 3");
  EXPECT_EQ(r.name, "forward, step 3");
  EXPECT_FALSE(r.op);
}

TEST(NsysReader, AFileOfTwoProcessesIsTwoRanksInTheOrderOfTheirGpus) {
  const std::string f = MakeExport(testutil::FreshTempDir(), "run.sqlite", kSchema);
  EXPECT_EQ(SniffInput(f), InputKind::kNsysSqlite);
  auto parts = NsysParts(f);
  ASSERT_TRUE(parts.ok()) << parts.status().message();
  EXPECT_EQ(*parts, (std::vector<std::string>{"pid=145", "pid=144"}));
  auto listed = ListTraceFiles(f);
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(*listed, (std::vector<std::string>{f + "#pid=145", f + "#pid=144"}));
  auto whole = ReadInput(f, {});
  ASSERT_FALSE(whole.ok());
  EXPECT_NE(whole.status().message().find("holds 2 processes with GPU work"), std::string::npos);

  auto r1 = ReadInput(f + "#pid=144", {});
  ASSERT_TRUE(r1.ok()) << r1.status().message();
  EXPECT_EQ(r1->rank, 1);
  EXPECT_EQ(r1->world_size, 2);
  EXPECT_EQ(CountOfKind(*r1, EventKind::kKernel), 1u);
  EXPECT_EQ(r1->device_of(FindEvent(*r1, EventKind::kKernel, "sm90_gemm_kernel")), 1);
  auto bad = ReadInput(f + "#pid=7", {});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("no process with GPU work is pid=7"), std::string::npos);
}

TEST(NsysReader, ReadsGpuWorkLaunchesOperatorsAndDevices) {
  const std::string f = MakeExport(testutil::FreshTempDir(), "run.sqlite", kSchema);
  auto m = ReadInput(f + "#pid=145", {});
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->rank, 0);
  EXPECT_EQ(m->base_time_ns, 1000000000000);
  const size_t k = FindEvent(*m, EventKind::kKernel, "sm90_gemm_kernel");
  EXPECT_EQ(m->ts_ns[k], 1000000000000 + 2000);
  EXPECT_EQ(m->dur_ns[k], 1000);
  EXPECT_EQ(m->stream_of(k), 7);
  const size_t launch = FindEvent(*m, EventKind::kRuntime, "cudaLaunchKernel");
  EXPECT_EQ(m->launcher[k], static_cast<int32_t>(launch));
  // No demangled name: the short one; a driver call launched it.
  const size_t nccl = FindEvent(*m, EventKind::kKernel, "gemm");
  EXPECT_EQ(m->kind[static_cast<size_t>(m->launcher[nccl])], EventKind::kDriver);
  const size_t copy = FindEvent(*m, EventKind::kMemcpy, "Memcpy HtoD (Pinned -> Device)");
  EXPECT_EQ(m->MemcpyBytesOf(copy), 4096);
  const size_t mm = FindEvent(*m, EventKind::kCpuOp, "aten::mm");
  ASSERT_NE(m->InputsOf(mm), nullptr);
  EXPECT_EQ(m->names[m->InputsOf(mm)->dims], "[[2, 3], [3, 4]]");
  EXPECT_EQ(m->tid_of(mm), m->tid_of(launch));
  FindEvent(*m, EventKind::kUserAnnotation, "ProfilerStep#5");
  // NCCL's own domain, its text through StringIds: on the timeline, not an annotation.
  FindEvent(*m, EventKind::kOther, "ncclSend");
  ASSERT_NE(m->FindDevice(0), nullptr);
  EXPECT_EQ(m->FindDevice(0)->name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(m->FindDevice(0)->num_sms, 132);
  ASSERT_EQ(m->diagnostics.size(), 1u);
  EXPECT_EQ(m->diagnostics[0].name(), "open_range");
}

TEST(NsysReader, NeverWritesTheFile) {
  const std::string dir = testutil::FreshTempDir();
  const std::string f = MakeExport(dir, "run.sqlite", kSchema);
  const std::string before = testutil::ReadText(f);
  const auto files_before = std::distance(std::filesystem::directory_iterator(dir), {});
  ASSERT_TRUE(ReadInput(f + "#pid=144", {}).ok());
  EXPECT_EQ(testutil::ReadText(f), before);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), {}), files_before);
}

TEST(NsysReader, SaysWhatIsNotAnExport) {
  const std::string dir = testutil::FreshTempDir();
  const std::string other = MakeExport(dir, "history.db", "CREATE TABLE runs (id INTEGER);");
  auto m = ReadInput(other, {});
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(),
            other +
                ": an SQLite database, but not an Nsight Systems export (it has no "
                "StringIds table)");
  const std::string rep = dir + "/profile.nsys-rep";
  std::ofstream(rep) << "binary";
  auto r = ReadInput(rep, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            rep +
                ": an Nsight Systems report, which only nsys reads; export it to SQLite first: "
                "nsys export --type sqlite --output " +
                dir + "/profile.sqlite " + rep);
}

// A folder of traces with trainprof's own run history beside them (an SQLite file that is no
// export): the history is not read as a trace, and the listing names it as what it is.
TEST(NsysReader, AFolderListsExportsButNotOtherSqliteFiles) {
  const std::string dir = testutil::FreshTempDir();
  const std::string f = MakeExport(dir, "run.sqlite", kSchema);
  MakeExport(dir, "trainprof.db", "CREATE TABLE runs (id INTEGER);");
  auto listed = ListTraceFiles(dir);
  ASSERT_TRUE(listed.ok()) << listed.status().message();
  EXPECT_EQ(*listed, (std::vector<std::string>{f + "#pid=145", f + "#pid=144"}));
  auto runs = ListTraceRuns(dir);
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->runs.size(), 1u);
  EXPECT_EQ(runs->runs[0].files.size(), 2u);
  ASSERT_EQ(runs->skipped.size(), 1u);
  EXPECT_EQ(runs->skipped[0], dir +
                                  "/trainprof.db: an SQLite database, but not an Nsight "
                                  "Systems export (it has no StringIds table): not read");
}

TEST(NsysReader, ATrimmedExportIsOneRankAndSaysWhatItLacks) {
  const std::string f = MakeExport(testutil::FreshTempDir(), "one.sqlite", R"sql(
CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
INSERT INTO StringIds VALUES (1, 'k');
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER,
  streamId INTEGER, correlationId INTEGER, shortName INTEGER, demangledName INTEGER);
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (10, 20, 0, 7, 1, 1, 1);
)sql");
  auto listed = ListTraceFiles(f);
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(*listed, std::vector<std::string>{f});
  auto m = ReadInput(f, {});
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(CountOfKind(*m, EventKind::kKernel), 1u);
  std::vector<std::string> said;
  for (const auto& d : m->diagnostics) said.push_back(std::string(d.name()));
  EXPECT_EQ(said, (std::vector<std::string>{"nsys_not_recorded", "nsys_not_recorded"}));
}

}  // namespace
}  // namespace trainprof::trace
