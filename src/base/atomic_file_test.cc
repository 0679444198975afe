// Files written whole or not at all, by one writer or by two at once.
#include "base/atomic_file.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "util/golden.h"

namespace trainprof::base {
namespace {

std::vector<std::string> FilesIn(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// Two writers of one path, opened before either commits: each has its own temporary file, both
// commit, and the path holds one of the two texts whole, with nothing left beside it.
TEST(AtomicFile, TwoWritersOfOnePathBothCommit) {
  const std::string dir = testutil::FreshTempDir();
  const std::string path = dir + "/same.csv";
  const std::string a(100'000, 'a'), b(100'000, 'b');
  AtomicFile first, second;
  ASSERT_TRUE(first.Open(path).ok());
  ASSERT_TRUE(second.Open(path).ok());
  first.Write(a);
  second.Write(b);
  EXPECT_TRUE(first.Commit().ok());
  EXPECT_TRUE(second.Commit().ok());
  EXPECT_EQ(testutil::ReadText(path), b);  // the last to commit
  EXPECT_EQ(FilesIn(dir), std::vector<std::string>{"same.csv"});
}

// The same from two threads, many times: no commit fails, the file is one text whole.
TEST(AtomicFile, TwoThreadsWritingOnePathNeverFail) {
  const std::string dir = testutil::FreshTempDir();
  const std::string path = dir + "/same.csv";
  for (int run = 0; run < 50; ++run) {
    Status results[2] = {Status::Ok(), Status::Ok()};
    std::thread other([&] { results[1] = WriteFileAtomically(path, std::string(50'000, 'b')); });
    results[0] = WriteFileAtomically(path, std::string(50'000, 'a'));
    other.join();
    ASSERT_TRUE(results[0].ok()) << results[0].ToString();
    ASSERT_TRUE(results[1].ok()) << results[1].ToString();
    const std::string text = testutil::ReadText(path);
    EXPECT_TRUE(text == std::string(50'000, 'a') || text == std::string(50'000, 'b'));
  }
  EXPECT_EQ(FilesIn(dir), std::vector<std::string>{"same.csv"});
}

// A writer not committed leaves nothing behind.
TEST(AtomicFile, DiscardedLeavesNothing) {
  const std::string dir = testutil::FreshTempDir();
  {
    AtomicFile f;
    ASSERT_TRUE(f.Open(dir + "/x.json").ok());
    f.Write("{}");
  }
  EXPECT_TRUE(FilesIn(dir).empty());
}

// Inside a folder put in place whole, a file is written at its own name (no temporary file, no
// rename) and one not committed is removed; a sibling folder and the folder once let go are
// written atomically again.
TEST(AtomicFile, InAFolderPutInPlaceWholeFilesAreWrittenInPlace) {
  const std::string dir = testutil::FreshTempDir();
  const std::string whole = dir + "/run.partial", beside = dir + "/run.partial-2";
  std::filesystem::create_directories(whole + "/rank0");
  std::filesystem::create_directories(beside);
  {
    const InPlaceFolder in_place(whole);
    for (const std::string& path : {whole + "/report.json", whole + "/rank0/trace.json"}) {
      AtomicFile f;
      ASSERT_TRUE(f.Open(path).ok());
      f.Write("{}");
      EXPECT_TRUE(std::filesystem::exists(path)) << "written at its name";
      EXPECT_TRUE(f.Commit().ok());
      EXPECT_EQ(testutil::ReadText(path), "{}");
    }
    {
      AtomicFile dropped;
      ASSERT_TRUE(dropped.Open(whole + "/x.csv").ok());
      dropped.Write("a,b");
    }
    EXPECT_EQ(FilesIn(whole), (std::vector<std::string>{"rank0", "report.json"}));
    AtomicFile other;
    ASSERT_TRUE(other.Open(beside + "/report.json").ok());
    EXPECT_FALSE(std::filesystem::exists(beside + "/report.json")) << "not the prefix's folder";
  }
  AtomicFile after;
  ASSERT_TRUE(after.Open(whole + "/late.json").ok());
  EXPECT_FALSE(std::filesystem::exists(whole + "/late.json")) << "let go: atomic again";
  EXPECT_TRUE(after.Commit().ok());
  EXPECT_TRUE(std::filesystem::exists(whole + "/late.json"));
}

}  // namespace
}  // namespace trainprof::base
