// Rank digests (analysis/ranks/digest.h): the SQLite tables hold the rank's steps, collectives and
// top kernels as documented, the summary comes back byte for byte, and a step window keeps only its
// steps and the collectives that started in them.
#include "analysis/ranks/digest.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <fstream>
#include <string>

#include "util/gen_world.h"
#include "util/generated_ranks.h"
#include "util/golden.h"

namespace trainprof {
namespace {

int64_t CountRows(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sql;
  int64_t n = -1;
  if (st && sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return n;
}

analysis::RankSummary WorldRank(int64_t rank) {
  testutil::AnalysedRanks r = testutil::AnalyseGeneratedRanks(testutil::GenerateWorld({}));
  return analysis::SummariseRank(r.models.at(rank), {}, "world/");
}

TEST(Digest, TablesAsDocumentedAndTheSummaryBack) {
  const analysis::RankSummary s = WorldRank(5);
  const std::string path = testutil::FreshTempDir() + "/" + analysis::DigestFileName(5);
  EXPECT_TRUE(path.ends_with("rank_00005.digest.sqlite")) << path;
  ASSERT_TRUE(analysis::WriteDigest(s, path).ok());
  const analysis::RankAnalysis& a = s.analysis;
  EXPECT_EQ(CountRows(path, "SELECT value FROM meta WHERE key = 'rank'"), 5);
  EXPECT_EQ(CountRows(path, "SELECT count(*) FROM steps"),
            static_cast<int64_t>(a.steps.steps.size()));
  EXPECT_EQ(CountRows(path, "SELECT count(*) FROM collectives WHERE type = 'allreduce'"),
            static_cast<int64_t>(a.comm_ops.size()));
  EXPECT_EQ(CountRows(path, "SELECT sum(kernel_ns) FROM steps"), [&] {
    int64_t sum = 0;
    for (const auto& b : a.overview.steps) sum += b.ns[analysis::kKernel];
    return sum;
  }());
  EXPECT_GT(CountRows(path, "SELECT count(*) FROM kernels"), 0);
  // The path marks only grow.
  EXPECT_EQ(CountRows(path,
                      "SELECT count(*) FROM collectives c JOIN collectives d "
                      "ON d.issue = c.issue + 1 WHERE d.compute_mark_start_ns < "
                      "c.compute_mark_end_ns"),
            0);
  StatusOr<analysis::RankSummary> back = analysis::ReadDigest(path);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(analysis::EncodeSummary(*back), analysis::EncodeSummary(s));
  // The part the questions across ranks read: steps and collectives, no kernel totals.
  StatusOr<analysis::RankSummary> lean =
      analysis::ReadDigest(path, analysis::DigestPart::kAcrossRanks);
  ASSERT_TRUE(lean.ok()) << lean.status().message();
  EXPECT_TRUE(lean->analysis.lists->kernels.empty());
  EXPECT_FALSE(a.lists->kernels.empty());
  EXPECT_EQ(lean->analysis.comm_ops.size(), a.comm_ops.size());
  EXPECT_EQ(lean->analysis.step_marks.size(), a.step_marks.size());
}

TEST(Digest, AWindowKeepsItsStepsAndTheirCollectives) {
  analysis::RankSummary s = WorldRank(2);
  const size_t ops = s.analysis.comm_ops.size(), steps = s.analysis.steps.steps.size();
  ASSERT_EQ(steps, 4u);
  EXPECT_EQ(analysis::WindowSummary(s, 1, 2), 2u);
  const analysis::RankAnalysis& a = s.analysis;
  ASSERT_EQ(a.steps.steps.size(), 2u);
  EXPECT_EQ(a.steps.steps[0].number, 1);
  EXPECT_EQ(a.overview.steps.size(), 2u);
  EXPECT_EQ(a.step_marks.size(), 2u);
  EXPECT_EQ(a.comm_ops.size(), ops / 2);
  for (const analysis::RankCommOp& o : a.comm_ops) {
    EXPECT_GE(o.start_ns, a.steps.steps.front().begin_ns);
    EXPECT_LT(o.start_ns, a.steps.steps.back().end_ns);
  }
  EXPECT_TRUE(a.lists->candidates.empty());
  EXPECT_EQ(analysis::WindowSummary(s, 7, 9), 0u);
}

TEST(Digest, AFileThatIsNotOneIsNamed) {
  const std::string dir = testutil::FreshTempDir(), junk = dir + "/x.digest.sqlite";
  std::ofstream(junk) << "not a database";
  StatusOr<analysis::RankSummary> r = analysis::ReadDigest(junk);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(junk + ": not a trainprof rank digest"), std::string::npos)
      << r.status().message();
  EXPECT_FALSE(analysis::WriteDigest(WorldRank(0), dir + "/no/such/dir/r.digest.sqlite").ok());
}

}  // namespace
}  // namespace trainprof
