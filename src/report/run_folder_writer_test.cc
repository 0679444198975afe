// WriteRunFolder: a run folder appears whole or not at all, for every front end.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "report/run_writers.h"
#include "util/golden.h"

namespace trainprof::report {
namespace {

namespace fs = std::filesystem;

Report Tiny() {
  Report r;
  r.kind = "analyze";
  r.AddSection("overview", "Overview").AddMetric("steps", "Steps", int64_t{3}, Unit::kCount);
  return r;
}

std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(WriteRunFolder, ANewFolderGetsEveryFileAndTheMeta) {
  const std::string root = testutil::FreshTempDir();
  Options::Output out;
  out.dir = root;
  out.name = "analyze";
  Report r = Tiny();
  std::string summary;
  auto dir = WriteRunFolder(r, out, 0, &summary, [](const std::string& d) {
    return std::vector<ExtraFile>{{"extra.txt", [d] {
                                     std::ofstream(d + "/extra.txt") << "x";
                                     return Status::Ok();
                                   }}};
  });
  ASSERT_TRUE(dir.ok()) << dir.status().message();
  EXPECT_EQ(*dir, root + "/19700101T000000Z-analyze");
  EXPECT_TRUE(fs::exists(*dir + "/report.json"));
  EXPECT_TRUE(fs::exists(*dir + "/extra.txt"));  // written into the folder being written
  EXPECT_EQ(Entries(root), std::vector<std::string>{"19700101T000000Z-analyze"});  // no partial
  EXPECT_NE(r.FindMeta("trainprof_version"), nullptr);
  EXPECT_EQ(std::get<std::string>(*r.FindMeta("run_dir")), *dir);
  EXPECT_NE(summary.find("Overview"), std::string::npos);
}

TEST(WriteRunFolder, AFailureLeavesNothingBehind) {
  const std::string root = testutil::FreshTempDir();
  Options::Output out;
  out.dir = root;
  Report r = Tiny();
  std::string summary;
  auto dir = WriteRunFolder(r, out, 0, &summary, [](const std::string&) {
    return std::vector<ExtraFile>{{"trace.json", [] { return DataLoss("disk full"); }}};
  });
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.status().message(), "disk full");
  EXPECT_TRUE(Entries(root).empty());
}

TEST(WriteRunFolder, AnEarlierRunIsKeptUnlessReplacedAndOtherFilesStay) {
  const std::string run = testutil::FreshTempDir() + "/run";
  Options::Output out;
  out.run_dir = run + "/";  // a trailing slash names the same folder
  std::string summary;
  Report first = Tiny();
  ASSERT_TRUE(WriteRunFolder(first, out, 0, &summary).ok());
  std::ofstream(run + "/notes.md") << "mine";
  Report second = Tiny();
  auto refused = WriteRunFolder(second, out, 0, &summary);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("holds an earlier run"), std::string::npos);
  // Replacing fails part way: the earlier run is still whole.
  out.overwrite = true;
  Report third = Tiny();
  auto failed = WriteRunFolder(third, out, 0, &summary, [](const std::string&) {
    return std::vector<ExtraFile>{{"trace.json", [] { return DataLoss("disk full"); }}};
  });
  ASSERT_FALSE(failed.ok());
  EXPECT_TRUE(fs::exists(run + "/report.json"));
  std::ofstream(run + "/stale.csv") << "of the earlier run";
  Report fourth = Tiny();
  auto replaced = WriteRunFolder(fourth, out, 0, &summary);
  ASSERT_TRUE(replaced.ok()) << replaced.status().message();
  EXPECT_EQ(*replaced, run);
  EXPECT_FALSE(fs::exists(run + "/stale.csv"));  // the earlier run's files went
  EXPECT_TRUE(fs::exists(run + "/notes.md"));    // what is not a run's file stays
  EXPECT_TRUE(fs::exists(run + "/report.json"));
  for (const std::string& n : Entries(fs::path(run).parent_path().string()))
    EXPECT_EQ(n.find("partial"), std::string::npos) << n;
}

}  // namespace
}  // namespace trainprof::report
