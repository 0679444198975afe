// Which files a process of `analyze --mpi` reads: its own ranks' when the names say which rank
// each file is, else every N-th file; with traces on node-local disks, only what its node sees.
#include "trace/file_shares.h"

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

TraceListing Listing(const std::string& dir, std::vector<std::string> files) {
  TraceListing l;
  l.runs.push_back({dir, std::move(files)});
  return l;
}

std::vector<std::vector<size_t>> Shares(const SharedListing& s, int processes) {
  std::vector<std::vector<size_t>> out;
  for (int p = 0; p < processes; ++p) out.push_back(FilesOf(s, 0, p));
  return out;
}

TEST(MergeListings, NodeLocalTracesAreReadByTheProcessesThatSeeThem) {
  // Two nodes of two processes; each node's disk holds its own four ranks' traces.
  const TraceListing a = Listing("t", Named({0, 1, 2, 3})), b = Listing("t", Named({4, 5, 6, 7}));
  SharedListing s = MergeListings({a, a, b, b});
  ASSERT_EQ(s.listing.runs.size(), 1u);
  EXPECT_EQ(s.listing.runs[0].files, Named({0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(s.seen_by[0][5], (std::vector<int>{2, 3}));
  AssignOwners(s, 4);
  EXPECT_EQ(Shares(s, 4), (std::vector<std::vector<size_t>>{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
  // Names without ranks: in turn where the process sees the file, else the least loaded that does.
  const TraceListing c = Listing("t", {"t/a0", "t/a1", "t/a2", "t/a3"}),
                     d = Listing("t", {"t/b0", "t/b1", "t/b2", "t/b3"});
  SharedListing u = MergeListings({c, c, d, d});
  AssignOwners(u, 4);
  EXPECT_EQ(Shares(u, 4), (std::vector<std::vector<size_t>>{{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
}

TEST(MergeListings, OnASharedFileSystemEveryProcessReadsItsOwnShare) {
  const TraceListing all = Listing("t", {"t/x", "t/y", "t/z"});
  SharedListing s = MergeListings({all, all});
  AssignOwners(s, 2);
  EXPECT_EQ(FilesOf(s, 0, 0), ShareOfFiles(all.runs[0].files, 0, 2));
  EXPECT_EQ(FilesOf(s, 0, 1), ShareOfFiles(all.runs[0].files, 1, 2));
  // Runs merge by folder; a folder only one process sees is still read.
  TraceListing more = all;
  more.runs.push_back({"u", {"u/rank0.json"}});
  more.skipped = {"t/junk (not a trace)"};
  SharedListing m = MergeListings({all, more});
  AssignOwners(m, 2);
  ASSERT_EQ(m.listing.runs.size(), 2u);
  EXPECT_EQ(m.listing.runs[1].dir, "u");
  EXPECT_EQ(m.owners[1], (std::vector<int>{1}));
  EXPECT_EQ(m.listing.skipped, more.skipped);
}

TEST(MergeListings, AFilesPartsKeepTheirOrder) {
  // An Nsight Systems export of several processes is one input a process, "#<part>" after it.
  const TraceListing a = Listing("t", {"t/a.sqlite#9", "t/a.sqlite#10", "t/b.json"});
  const TraceListing b = Listing("t", {"t/a#x.json", "t/a.sqlite#9", "t/a.sqlite#10"});
  const SharedListing s = MergeListings({a, b});
  EXPECT_EQ(s.listing.runs[0].files,
            (std::vector<std::string>{"t/a#x.json", "t/a.sqlite#9", "t/a.sqlite#10", "t/b.json"}));
}

TEST(MergeListings, ListingsTravelAsBytes) {
  TraceListing l = Listing("t", Named({0, 1}));
  l.skipped = {"t/x (file skipped)"};
  StatusOr<TraceListing> back = DecodeListing(EncodeListing(l));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->runs[0].files, l.runs[0].files);
  EXPECT_EQ(back->skipped, l.skipped);
  SharedListing s = MergeListings({l, l});
  AssignOwners(s, 2);
  const std::string bytes = EncodeSharedListing(s);
  StatusOr<SharedListing> shared = DecodeSharedListing(bytes);
  ASSERT_TRUE(shared.ok()) << shared.status().message();
  EXPECT_EQ(shared->owners, s.owners);
  EXPECT_EQ(shared->listing.runs[0].dir, "t");
  for (size_t cut : {size_t{0}, size_t{7}, bytes.size() / 2, bytes.size() - 1})
    EXPECT_FALSE(DecodeSharedListing(bytes.substr(0, cut)).ok()) << cut;
  EXPECT_FALSE(DecodeListing(EncodeListing(l) + "x").ok());
}

}  // namespace
}  // namespace trainprof::trace
