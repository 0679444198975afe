#include "live/world.h"

#include <gtest/gtest.h>

namespace trainprof::live {
namespace {

LiveSnapshot RankSnapshot(double step_s, double comm, double samples) {
  LiveSnapshot s;
  s.step = 50;
  s.step_median_s = step_s;
  s.samples_per_s = samples;
  s.split = LiveSplit{};
  s.split->communication = comm;
  return s;
}

// Four ranks with equal step times: rank 2's own work is 25 % longer, so it reaches the
// all-reduce last and waits in it least; the others wait for it. Rank 2 is named first and late,
// the others waiting, never slow; throughput is summed and the skew is 1.
TEST(LiveWorld, TheLateRankIsTheCulpritAndTheOthersWait) {
  const int64_t now = 1'000'000;
  std::vector<std::string> digests;
  for (int r = 0; r < 4; ++r)
    digests.push_back(LiveRankDigest(RankSnapshot(0.100, r == 2 ? 0.05 : 0.25, 80), r, now - 500));
  const LiveWorld w = BuildLiveWorld(digests, 4, now, 1.0);
  EXPECT_EQ(w.reporting, 4);
  EXPECT_NEAR(*w.samples_per_s, 320, 1e-9);
  EXPECT_NEAR(*w.step_skew, 1.0, 1e-12);
  ASSERT_EQ(w.slowest.size(), 3u);
  EXPECT_EQ(w.slowest[0].rank, 2);
  EXPECT_EQ(w.slowest[0].role, "late in collectives");
  EXPECT_EQ(w.slowest[1].role, "waiting in collectives");
  EXPECT_TRUE(w.missing.empty());
}

// The control: equal ranks name nobody late.
TEST(LiveWorld, EqualRanksNameNobody) {
  std::vector<std::string> digests;
  for (int r = 0; r < 4; ++r) digests.push_back(LiveRankDigest(RankSnapshot(0.1, 0.2, 80), r, 0));
  for (const LiveRank& r : BuildLiveWorld(digests, 4, 100, 1.0).slowest) EXPECT_EQ(r.role, "");
}

// A rank that sent nothing, and one quiet for 12 s, are said with their last step; a finished
// rank is not missing however long ago it spoke.
TEST(LiveWorld, QuietRanksAreNamedWithTheirLastStep) {
  const int64_t now = 100'000;
  LiveSnapshot done = RankSnapshot(0.1, 0.2, 80);
  done.finished = true;
  const LiveWorld w = BuildLiveWorld({LiveRankDigest(RankSnapshot(0.1, 0.2, 80), 0, now), "",
                                      LiveRankDigest(RankSnapshot(0.1, 0.2, 80), 2, now - 12'000),
                                      LiveRankDigest(done, 3, now - 60'000)},
                                     4, now, 1.0);
  EXPECT_EQ(w.reporting, 2);
  ASSERT_EQ(w.missing.size(), 2u);
  EXPECT_EQ(w.missing[0], "rank 1: no snapshot yet");
  EXPECT_EQ(w.missing[1], "rank 2: no snapshot for 12 s (last at step 50)");
}

// The world travels in live.json and shows in the view.
TEST(LiveWorld, InTheJsonAndTheView) {
  LiveSnapshot s = RankSnapshot(0.1, 0.2, 80);
  s.world = BuildLiveWorld({LiveRankDigest(RankSnapshot(0.1, 0.05, 80), 0, 0),
                            LiveRankDigest(RankSnapshot(0.1, 0.30, 80), 1, 0), ""},
                           3, 0, 1.0);
  auto back = ParseLiveJson(LiveJson(s), "live.json");
  ASSERT_TRUE(back.ok());
  ASSERT_TRUE(back->world.has_value());
  EXPECT_EQ(back->world->slowest[0].role, "late in collectives");
  EXPECT_EQ(LiveLine(*back), LiveLine(s));
  bool world_row = false, missing_row = false;
  for (const std::string& l : LiveView(*back, 200)) {
    world_row |= l.starts_with(
        "world      2 of 3 ranks, 160.0 samples/s, skew 1.00x; slowest: "
        "rank 0 100.0 ms (late in collectives)");
    missing_row |= l == "missing    rank 2: no snapshot yet";
  }
  EXPECT_TRUE(world_row && missing_row);
}

}  // namespace
}  // namespace trainprof::live
