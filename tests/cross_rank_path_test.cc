// The critical path across ranks in a generated world (util/gen_world.h): with one rank computing
// 25 % longer, the path runs on that rank, through its compute; it is continuous, it spans the
// analysed steps, and clock offsets of 50 ms do not move it.
#include "analysis/ranks/cross_rank_path.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analysis/ranks/collectives.h"
#include "util/gen_world.h"
#include "util/generated_ranks.h"

namespace trainprof {
namespace {

using analysis::CrossRankPath;
using analysis::PathCategory;
using testutil::WorldSpec;

struct WorldPath {
  testutil::AnalysedRanks ranks;
  CrossRankPath path;
};

WorldPath WalkWorld(const WorldSpec& w) {
  WorldPath out{testutil::AnalyseGeneratedRanks(testutil::GenerateWorld(w)), {}};
  const std::vector<analysis::RankInfo> infos = analysis::InfosOf(out.ranks.models);
  const analysis::CollectivesResult c = analysis::MatchCollectives(infos, out.ranks.an);
  out.path = analysis::ComputeCrossRankPath(infos, out.ranks.an, c);
  return out;
}

// The path's time on rank `rank` by category.
std::array<int64_t, analysis::kNumPathCategories> OnRank(const CrossRankPath& p, int64_t rank) {
  std::array<int64_t, analysis::kNumPathCategories> out{};
  for (const analysis::PathSegment& s : p.segments)
    if (static_cast<int64_t>(s.model) == rank)
      for (int k = 0; k < analysis::kNumPathCategories; ++k) out[k] += s.ns[k];
  return out;
}

int64_t Sum(const std::array<int64_t, analysis::kNumPathCategories>& a) {
  return a[0] + a[1] + a[2] + a[3];
}

TEST(CrossRankPath, RunsThroughTheCulpritsCompute) {
  const WorldPath w = WalkWorld({});
  ASSERT_TRUE(w.path.note.empty()) << w.path.note;
  const auto on5 = OnRank(w.path, 5);
  const double len = static_cast<double>(w.path.length_ns());
  EXPECT_GT(static_cast<double>(Sum(on5)), 0.9 * len);
  EXPECT_GT(static_cast<double>(on5[static_cast<int>(PathCategory::kCompute)]),
            0.5 * static_cast<double>(Sum(on5)));
  const report::Table* t = w.ranks.report.FindTable("cross_rank_path", "path_by_rank");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(std::get<std::string>(t->rows.at(0).at(0)), "5");
  // The straggler finding says so.
  bool said = false;
  for (const auto& f : w.ranks.report.FindSection("recommendations")->findings)
    said |= f.text.find("of the critical path across ranks runs on it") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(CrossRankPath, IsContinuousAndSpansTheSteps) {
  const WorldPath w = WalkWorld({.culprit = -1});
  ASSERT_FALSE(w.path.segments.empty()) << w.path.note;
  EXPECT_EQ(w.path.segments.front().begin_ns, w.path.begin_ns);
  EXPECT_EQ(w.path.segments.back().end_ns, w.path.end_ns);
  for (size_t i = 1; i < w.path.segments.size(); ++i)
    EXPECT_EQ(w.path.segments[i].begin_ns, w.path.segments[i - 1].end_ns) << i;
  for (const analysis::PathSegment& s : w.path.segments)
    EXPECT_EQ(Sum(s.ns), s.end_ns - s.begin_ns);
  // The steps' span on the rank the path ends on; the path starts within 1 % of its start.
  const analysis::RankAnalysis& a = w.ranks.an[w.path.segments.back().model];
  const int64_t span = a.steps.steps.back().end_ns - a.steps.steps.front().begin_ns;
  EXPECT_NEAR(static_cast<double>(w.path.length_ns()), static_cast<double>(span), 0.01 * span);
  EXPECT_EQ(w.path.steps, static_cast<int64_t>(a.steps.steps.size()));
}

TEST(CrossRankPath, ClockOffsetsOf50MsDoNotMoveIt) {
  const WorldPath same = WalkWorld({.clock_ns = 0}), apart = WalkWorld({.clock_ns = 50'000'000});
  ASSERT_EQ(same.path.segments.size(), apart.path.segments.size());
  for (size_t i = 0; i < same.path.segments.size(); ++i) {
    EXPECT_EQ(same.path.segments[i].model, apart.path.segments[i].model) << i;
    EXPECT_EQ(same.path.segments[i].collective, apart.path.segments[i].collective) << i;
  }
  EXPECT_NEAR(static_cast<double>(same.path.length_ns()),
              static_cast<double>(apart.path.length_ns()), 0.01 * same.path.length_ns());
}

// A rank whose file was cut before its first step ended has no steps: the path runs until it
// reaches that rank, and starts there.
TEST(CrossRankPath, StopsAtARankWithoutSteps) {
  testutil::AnalysedRanks r = testutil::AnalyseGeneratedRanks(testutil::GenerateWorld({}));
  r.an[5].steps.steps.clear();
  r.an[5].step_marks.clear();
  const std::vector<analysis::RankInfo> infos = analysis::InfosOf(r.models);
  const CrossRankPath p =
      analysis::ComputeCrossRankPath(infos, r.an, analysis::MatchCollectives(infos, r.an));
  ASSERT_TRUE(p.note.empty()) << p.note;
  ASSERT_FALSE(p.segments.empty());
  EXPECT_EQ(p.segments.front().model, 5u);
  EXPECT_GE(p.segments.front().collective, 0);  // rank 5's last transfer, where the path starts
  EXPECT_EQ(p.begin_ns, p.segments.front().begin_ns);
}

TEST(CrossRankPath, OneRankHasNone) {
  testutil::AnalysedRanks r =
      testutil::AnalyseGeneratedRanks({testutil::GenerateWorld({.ranks = 8}).front()});
  EXPECT_EQ(r.report.FindSection("cross_rank_path"), nullptr);
}

}  // namespace
}  // namespace trainprof
