#include "report/run_dir_lock.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "util/golden.h"

namespace trainprof::report {
namespace {

namespace fs = std::filesystem;

TEST(RunDirLockTest, AnotherProcessWritingTheFolderIsAClearError) {
  const std::string dir = testutil::FreshTempDir() + "/run";
  fs::create_directories(dir);
  int ready[2], done[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(done), 0);
  const pid_t child = fork();
  if (child == 0) {  // the other writer: claims the folder and holds it until told
    const bool ok = ClaimRunDir(dir, false, true).ok();
    char c = ok ? 'y' : 'n';
    (void)!write(ready[1], &c, 1);
    (void)!read(done[0], &c, 1);
    _exit(0);
  }
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  ASSERT_EQ(c, 'y');
  Status s = ClaimRunDir(dir, true, false);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(), "run folder " + dir +
                             " is being written by another trainprof process (pid " +
                             std::to_string(child) +
                             "); wait for it to finish, or choose "
                             "another folder");
  (void)!write(done[1], &c, 1);
  int status = 0;
  waitpid(child, &status, 0);
  // Once it has ended, the folder holds its (empty) run: refused without overwrite.
  Status again = ClaimRunDir(dir, false, false);
  EXPECT_NE(again.message().find("holds an earlier run; --overwrite"), std::string::npos)
      << again.message();
}

TEST(RunDirLockTest, OverwriteRemovesOnlyTheEarlierRunsFiles) {
  const std::string dir = testutil::FreshTempDir() + "/run";
  fs::create_directories(dir + "/rank1");
  fs::create_directories(dir + "/notes");
  for (const char* f : {"report.json", "summary.txt", "time_report.csv", "trace.json",
                        "rank1/report.json", "notes/mine.md", "keep.py"})
    std::ofstream(dir + "/" + f) << "x";
  Status refused = ClaimRunDir(dir, false, false);
  EXPECT_EQ(refused.message(), "run folder " + dir +
                                   " holds an earlier run; --overwrite (output.overwrite: true) "
                                   "removes its files first, or choose another folder");
  EXPECT_TRUE(fs::exists(dir + "/report.json"));
  ASSERT_TRUE(ClaimRunDir(dir, true, false).ok());
  for (const char* gone : {"report.json", "summary.txt", "time_report.csv", "trace.json", "rank1"})
    EXPECT_FALSE(fs::exists(dir + "/" + gone)) << gone;
  for (const char* kept : {"notes/mine.md", "keep.py", ".trainprof.lock"})
    EXPECT_TRUE(fs::exists(dir + "/" + kept)) << kept;
  // A folder with no run in it is simply used.
  const std::string empty = testutil::FreshTempDir() + "/fresh";
  fs::create_directories(empty);
  EXPECT_TRUE(ClaimRunDir(empty, false, false).ok());
}

}  // namespace
}  // namespace trainprof::report
