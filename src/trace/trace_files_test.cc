// Which files a process of `analyze --mpi` reads: its own ranks' when the names say which rank
// each file is, else every N-th file.
#include "trace/trace_files.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace trainprof::trace {
namespace {

TEST(RankInFileName, ReadsTheDigitsAfterRank) {
  EXPECT_EQ(RankInFileName("traces/rank12.pt.trace.json"), 12);
  EXPECT_EQ(RankInFileName("job_Rank-3.json.gz"), 3);
  EXPECT_EQ(RankInFileName("/a/rank_7/w_rank_0005.json"), 5);  // the file's name, not its folder's
  EXPECT_EQ(RankInFileName("ranking_rank2.json"), 2);          // "ranking" carries no number
  EXPECT_EQ(RankInFileName("host_1234.1700000000.pt.trace.json"), -1);
  EXPECT_EQ(RankInFileName("rank.json"), -1);
}

std::vector<std::string> Named(const std::vector<int>& ranks) {
  std::vector<std::string> out;
  for (int r : ranks) out.push_back("t/rank" + std::to_string(r) + ".json");
  return out;
}

TEST(ShareOfFiles, AProcessPerRankReadsItsOwnRanksFile) {
  // Sorted by name: rank0, rank1, rank10, rank11, rank2, ...
  const std::vector<std::string> files = Named({0, 1, 10, 11, 2, 3, 4, 5, 6, 7, 8, 9});
  for (int p = 0; p < 12; ++p) {
    const std::vector<size_t> mine = ShareOfFiles(files, p, 12);
    ASSERT_EQ(mine.size(), 1u) << p;
    EXPECT_EQ(RankInFileName(files[mine[0]]), p);
  }
}

TEST(ShareOfFiles, AProcessPerNodeReadsItsNodesRanks) {
  const std::vector<std::string> files = Named({0, 1, 2, 3, 4, 5, 6, 7});
  EXPECT_EQ(ShareOfFiles(files, 0, 2), (std::vector<size_t>{0, 1, 2, 3}));
  EXPECT_EQ(ShareOfFiles(files, 1, 2), (std::vector<size_t>{4, 5, 6, 7}));
  // A missing rank leaves its process one file short; every file still has one process.
  const std::vector<std::string> gap = Named({0, 1, 2, 4, 5, 6, 7});
  size_t total = 0;
  for (int p = 0; p < 4; ++p) total += ShareOfFiles(gap, p, 4).size();
  EXPECT_EQ(total, gap.size());
  EXPECT_EQ(ShareOfFiles(gap, 1, 4), (std::vector<size_t>{2}));
}

TEST(ShareOfFiles, NamesWithoutDistinctRanksGoInTurn) {
  const std::vector<std::string> files = {"a.json", "b.json", "rank1.json", "rank1.b.json",
                                          "c.json"};
  EXPECT_EQ(ShareOfFiles(files, 0, 2), (std::vector<size_t>{0, 2, 4}));
  EXPECT_EQ(ShareOfFiles(files, 1, 2), (std::vector<size_t>{1, 3}));
  EXPECT_TRUE(ShareOfFiles(files, 5, 6).empty());
}

}  // namespace
}  // namespace trainprof::trace
