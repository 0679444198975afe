// Input kinds are told by their first bytes, never by the file's name.
#include "trace/input_kind.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "trace/byte_source.h"
#include "trace/trace_files.h"
#include "util/golden.h"
#include "util/gzip.h"

namespace trainprof::trace {
namespace {

constexpr std::string_view kTrace =
    "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, "
    "\"tid\": 2, \"ts\": 10, \"dur\": 5}], \"distributedInfo\": {\"rank\": 3}}";

std::string WriteInput(const std::string& dir, const std::string& name, std::string_view data) {
  const std::string p = dir + "/" + name;
  std::ofstream(p, std::ios::binary) << data;
  return p;
}

// A pickle's first bytes as torch.save and pickle.dump (protocol 2 to 5) write them.
std::string Pickle(char protocol) { return std::string("\x80") + protocol + "}q\x00."; }

TEST(InputKind, ToldByTheBytesNotTheName) {
  const std::string dir = testutil::FreshTempDir();
  EXPECT_EQ(SniffInput(WriteInput(dir, "trace.txt", kTrace)), InputKind::kKinetoJson);
  EXPECT_EQ(SniffInput(WriteInput(dir, "x.bin", testutil::GzipText(std::string(kTrace)))),
            InputKind::kKinetoJson);
  EXPECT_EQ(SniffInput(WriteInput(dir, "bom.json", "\xEF\xBB\xBF \n[{\"ph\": \"X\"}]")),
            InputKind::kKinetoJson);
  EXPECT_EQ(SniffInput(WriteInput(dir, "snap.json", Pickle('\x04'))), InputKind::kMemorySnapshot);
  EXPECT_EQ(SniffInput(WriteInput(dir, "snap.pickle", Pickle('\x02'))), InputKind::kMemorySnapshot);
  // Neither kind: text, an empty file, a pickle byte with no protocol after it, no file.
  EXPECT_EQ(SniffInput(WriteInput(dir, "notes.json", "hello")), InputKind::kUnknown);
  EXPECT_EQ(SniffInput(WriteInput(dir, "empty.json", "")), InputKind::kUnknown);
  EXPECT_EQ(SniffInput(WriteInput(dir, "short.pkl", "\x80")), InputKind::kUnknown);
  EXPECT_EQ(SniffInput(dir + "/missing"), InputKind::kUnknown);
}

// An SQLite file's first 100 bytes with `application_id` at byte 68, big-endian.
std::string SqliteHeader(uint32_t application_id) {
  std::string h("SQLite format 3\0", 16);
  h.resize(100, '\0');
  for (int i = 0; i < 4; ++i) h[68 + i] = static_cast<char>(application_id >> (24 - 8 * i));
  return h;
}

TEST(InputKind, SummariesDigestsAndOtherDatabasesAreKindsOfTheirOwn) {
  const std::string dir = testutil::FreshTempDir();
  EXPECT_EQ(SniffInput(WriteInput(dir, "r.bin", std::string(kRankSummaryMagic) + "\x0d")),
            InputKind::kRankSummary);
  EXPECT_EQ(SniffInput(WriteInput(dir, "n.db", SqliteHeader(0))), InputKind::kNsysSqlite);
  EXPECT_EQ(SniffInput(WriteInput(dir, "d.db", SqliteHeader(kRankDigestApplicationId))),
            InputKind::kRankDigest);
  const std::string history = WriteInput(dir, "trainprof.db", SqliteHeader(0x74707266));
  EXPECT_EQ(SniffInput(history), InputKind::kOtherSqlite);
  // Named, never read as Nsight: the reader says what it is and what reads such files.
  auto read = ReadInput(history, {});
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find(
                "a SQLite database of another program (its application_id is not Nsight's 0), "
                "not a trace (trainprof reads Nsight Systems exports and its own digests only)"),
            std::string::npos)
      << read.status().message();
  auto summary = ReadInput(dir + "/r.bin", {});
  ASSERT_FALSE(summary.ok());
  EXPECT_EQ(summary.status().message(),
            dir + "/r.bin: a trainprof rank summary, not a trace (trainprof merge reads it)");
}

TEST(InputKind, EveryKindHasANameAndOnlyTimelinesARead) {
  ASSERT_GE(InputFormats().size(), 2u);
  for (const InputFormat& f : InputFormats()) {
    EXPECT_FALSE(f.name.empty());
    EXPECT_EQ(FindInputFormat(f.kind), &f);
  }
  EXPECT_NE(FindInputFormat(InputKind::kKinetoJson)->read, nullptr);
  EXPECT_EQ(FindInputFormat(InputKind::kMemorySnapshot)->read, nullptr);
  EXPECT_EQ(FindInputFormat(InputKind::kUnknown), nullptr);
}

TEST(InputKind, ReadInputReadsARenamedTraceAndRefusesASnapshot) {
  const std::string dir = testutil::FreshTempDir();
  auto m =
      ReadInput(WriteInput(dir, "rank0.trace.bin", testutil::GzipText(std::string(kTrace))), {});
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->size(), 1u);
  EXPECT_EQ(m->rank, 3);
  const std::string snap = WriteInput(dir, "a.json", Pickle('\x04'));
  auto s = ReadInput(snap, {});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(
      s.status().message(),
      snap + ": a PyTorch memory snapshot, not a trace (trainprof analyze reads it on its own)");
  // No kind at all: the Kineto reader's error, naming the file and the byte.
  auto bad = ReadInput(WriteInput(dir, "bad.json", "hello"), {});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(dir + "/bad.json: byte 0"), std::string::npos)
      << bad.status().message();
}

// A rank file is opened once: its kind told from the head read for it, the head given back to
// the reader, and the bytes read up to the size the file had when opened.
TEST(InputKind, AFileOpenedOnceIsReadWholeFromItsHead) {
  const std::string dir = testutil::FreshTempDir();
  // The one event lies past the head's 512 bytes.
  const std::string padded =
      "{\"pad\": \"" + std::string(700, 'x') + "\", " + std::string(kTrace).substr(1);
  for (const std::string& data : {padded, testutil::GzipText(padded)}) {
    const std::string path = WriteInput(dir, "rank.bin", data);
    auto file = OpenedFile::Open(path, kHeadBytes);
    ASSERT_TRUE(file.ok()) << file.status().message();
    EXPECT_EQ(file->size(), static_cast<int64_t>(data.size()));
    EXPECT_EQ(file->head(), std::string_view(data).substr(0, kHeadBytes));
    EXPECT_EQ(SniffHead(file->head()), InputKind::kKinetoJson);
    auto m = ReadInput(path, {});
    ASSERT_TRUE(m.ok()) << m.status().message();
    EXPECT_EQ(m->size(), 1u);
    EXPECT_EQ(m->rank, 3);
  }
  // Bytes written after the file was opened are not read.
  const std::string path = WriteInput(dir, "short.json", "0123456789");
  auto file = OpenedFile::Open(path, 4);
  ASSERT_TRUE(file.ok());
  std::ofstream(path, std::ios::app) << "abcdef";
  auto src = OpenTraceBytes(std::move(*file), /*inflate_ahead=*/false);
  ASSERT_TRUE(src.ok());
  std::string got(64, '\0');
  size_t n = 0;
  for (size_t k; (k = *(*src)->Read(got.data() + n, got.size() - n)) > 0;) n += k;
  EXPECT_EQ(got.substr(0, n), "0123456789");
  EXPECT_EQ((*src)->raw_bytes_done(), 10);
}

TEST(InputKind, AnInputThatCannotBeOpenedOrReadSaysSo) {
  const std::string dir = testutil::FreshTempDir();
  auto missing = ReadInput(dir + "/none.json", {});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(), dir + "/none.json: cannot open: No such file or directory");
  auto folder = ReadInput(dir, {});
  ASSERT_FALSE(folder.ok());
  EXPECT_EQ(folder.status().message(), dir + ": cannot read: Is a directory");
}

TEST(InputKind, AFolderListsTracesByTheirBytes) {
  const std::string dir = testutil::FreshTempDir();
  const std::string txt = WriteInput(dir, "a_trace.txt", kTrace);
  const std::string gz = WriteInput(dir, "b_renamed.bin", testutil::GzipText(std::string(kTrace)));
  const std::string broken =
      WriteInput(dir, "c_broken.json", "not json");    // named: its error is said
  WriteInput(dir, "d_snapshot.json", Pickle('\x04'));  // a snapshot, not a trace
  WriteInput(dir, "notes.txt", "just notes");
  WriteInput(dir, "report.json", "{}");  // trainprof's own report
  auto files = ListTraceFiles(dir);
  ASSERT_TRUE(files.ok()) << files.status().message();
  EXPECT_EQ(*files, (std::vector<std::string>{txt, gz, broken}));
  auto runs = ListTraceRuns(dir);
  ASSERT_TRUE(runs.ok()) << runs.status().message();
  ASSERT_EQ(runs->runs.size(), 1u);
  EXPECT_EQ(runs->runs[0].files, *files);
}

// Issue 69: vLLM's layout, the run's trace beside capture_traces/, is one run; the capture
// traces are its data (read with it), said once, never a second run. A capture_traces/ folder
// given alone is a run.
TEST(InputKind, CaptureTracesBesideARunAreItsData) {
  const std::string dir = testutil::FreshTempDir();
  const std::string run = WriteInput(dir, "vllm_decode.json", kTrace);
  std::filesystem::create_directories(dir + "/capture_traces");
  WriteInput(dir + "/capture_traces", "capture_bs1.json", kTrace);
  auto runs = ListTraceRuns(dir);
  ASSERT_TRUE(runs.ok()) << runs.status().message();
  ASSERT_EQ(runs->runs.size(), 1u);
  EXPECT_EQ(runs->runs[0].files, std::vector<std::string>{run});
  ASSERT_EQ(runs->skipped.size(), 1u);
  EXPECT_NE(runs->skipped[0].find("not a run: the graph capture traces of the run in " + dir),
            std::string::npos)
      << runs->skipped[0];
  auto alone = ListTraceRuns(dir + "/capture_traces");
  ASSERT_TRUE(alone.ok()) << alone.status().message();
  EXPECT_EQ(alone->runs.size(), 1u);
}

}  // namespace
}  // namespace trainprof::trace
