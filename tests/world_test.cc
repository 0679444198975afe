// The straggler in a generated world (util/gen_world.h): one rank computes 25 % longer, every
// other rank absorbs the wait at the next collective of its group, and all step times are
// equal, so only the collectives tell who is late. The culprit and its cause are named, the
// ranks that wait are named as waiting, and the answer stands without sequence numbers, across
// tensor- and data-parallel groups, with clocks 50 ms apart and with a rank missing.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "util/gen_world.h"
#include "util/generated_ranks.h"

namespace trainprof {
namespace {

using testutil::WorldSpec;

std::vector<std::string> WorldFindings(const WorldSpec& w, bool drop_rank3 = false) {
  auto ranks = testutil::GenerateWorld(w);
  if (drop_rank3) ranks.erase(ranks.begin() + 3);
  testutil::AnalysedRanks r = testutil::AnalyseGeneratedRanks(ranks);
  std::vector<std::string> out;
  for (const auto& f : r.report.FindSection("recommendations")->findings) out.push_back(f.text);
  for (const auto& d : r.report.diagnostics)
    if (d.name() == "missing_ranks") out.push_back("missing_ranks: " + d.message);
  return out;
}

std::vector<std::string> FindingsWith(const std::vector<std::string>& all,
                                      const std::string& part) {
  std::vector<std::string> out;
  std::copy_if(all.begin(), all.end(), std::back_inserter(out),
               [&](const std::string& f) { return f.find(part) != std::string::npos; });
  return out;
}

bool TextHas(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(World, NamesTheCulpritAndItsCauseNotItsVictims) {
  const std::vector<std::string> f = WorldFindings({});
  const std::vector<std::string> s = FindingsWith(f, "is the straggler:");
  ASSERT_EQ(s.size(), 1u) << ::testing::PrintToString(f);
  EXPECT_TRUE(
      s[0].starts_with("Rank 5: rank 5 is the straggler: rank 5 arrives last at 100% of "
                       "its collectives (allreduce ×8)"))
      << s[0];
  EXPECT_TRUE(TextHas(s[0], "its GPU compute runs 2")) << s[0];
  EXPECT_TRUE(TextHas(s[0], "% longer than the median rank's")) << s[0];
  EXPECT_TRUE(
      TextHas(s[0], "longer per call with as many calls, as a slower or throttled GPU gives"))
      << s[0];
  EXPECT_TRUE(TextHas(s[0], "Its device 0 is NVIDIA H100 80GB HBM3, as the others'.")) << s[0];
  EXPECT_TRUE(TextHas(s[0], "nvidia-smi")) << s[0];
  // The others wait: named as waiting for rank 5, not told to overlap their communication.
  const std::vector<std::string> v = FindingsWith(f, "waiting in collectives for rank 5");
  ASSERT_EQ(v.size(), 1u) << ::testing::PrintToString(f);
  EXPECT_TRUE(v[0].starts_with("Ranks 0–4, 6–7: ")) << v[0];
  // Rank 5's own exposed communication is its transfers: that advice may name it, no other.
  for (const std::string& o : FindingsWith(f, "Overlap it"))
    EXPECT_TRUE(o.starts_with("Rank 5: ")) << o;
}

TEST(World, TheControlNamesNobody) {
  const std::vector<std::string> f = WorldFindings({.culprit = -1});
  EXPECT_TRUE(FindingsWith(f, "straggler").empty()) << ::testing::PrintToString(f);
  EXPECT_TRUE(FindingsWith(f, "waiting in collectives").empty()) << ::testing::PrintToString(f);
}

TEST(World, ClockOffsetsOf50MsDoNotChangeTheAnswer) {
  EXPECT_EQ(WorldFindings({.clock_ns = 0}), WorldFindings({.clock_ns = 50'000'000}));
}

TEST(World, WithoutSequenceNumbersTheOrderOfIssueGivesTheSameCulprit) {
  const std::vector<std::string> with = FindingsWith(WorldFindings({}), "is the straggler:");
  const std::vector<std::string> without =
      FindingsWith(WorldFindings({.seq = false}), "is the straggler:");
  ASSERT_EQ(without.size(), 1u);
  EXPECT_EQ(with, without);
}

TEST(World, DataParallelAloneToo) {
  const std::vector<std::string> s = FindingsWith(WorldFindings({.tp = 0}), "is the straggler:");
  ASSERT_EQ(s.size(), 1u);
  EXPECT_TRUE(
      s[0].starts_with("Rank 5: rank 5 is the straggler: rank 5 arrives last at 100% of "
                       "its collectives (allreduce ×4)"))
      << s[0];
}

TEST(World, AMissingRankIsNamedAndTheOthersAnalysed) {
  const std::vector<std::string> f = WorldFindings({}, /*drop_rank3=*/true);
  const std::vector<std::string> m = FindingsWith(f, "missing_ranks: ");
  ASSERT_EQ(m.size(), 1u) << ::testing::PrintToString(f);
  EXPECT_TRUE(m[0].ends_with("1 of the world's 8 ranks have no trace: 3")) << m[0];
  ASSERT_EQ(FindingsWith(f, "rank 5 is the straggler").size(), 1u) << ::testing::PrintToString(f);
}

}  // namespace
}  // namespace trainprof
