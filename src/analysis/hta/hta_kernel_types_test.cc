// HTA's kernel type breakdown on hand-made unions, with the times under each overlap worked out
// by hand: from disjoint unions (a sweep over them) and from HTA's merge, which can keep an
// interval that ends before it begins (a sorted copy of the edges).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "analysis/hta/hta.h"
#include "analysis/hta/hta_events.h"

namespace trainprof::analysis {
namespace {

std::map<std::string, int64_t> Breakdown(Intervals comp, Intervals comm, Intervals mem) {
  const trace::TraceModel m;
  HtaEvents e{.times = HtaTimes(m, false)};
  e.comp = std::move(comp), e.comm = std::move(comm), e.mem = std::move(mem);
  std::map<std::string, int64_t> out;
  for (const auto& [label, ns] : KernelTypeBreakdown(e)) out[label] = ns;
  return out;
}

TEST(KernelTypeBreakdown, TimeUnderEachOverlap) {
  // comp [0,10) [15,20), comm [5,17): 1 on [0,5) and [17,20), both on [5,10) and [15,17).
  const std::map<std::string, int64_t> want = {
      {"COMPUTATION", 8}, {"COMPUTATION overlapping COMMUNICATION", 7}, {"COMMUNICATION", 5}};
  EXPECT_EQ(Breakdown({{0, 10}, {15, 20}}, {{5, 17}}, {}), want);
  EXPECT_EQ(Breakdown({}, {}, {{3, 4}}), (std::map<std::string, int64_t>{{"MEMORY", 1}}));
  EXPECT_TRUE(Breakdown({}, {}, {}).empty());
}

TEST(KernelTypeBreakdown, AnIntervalEndingBeforeItBeginsCountsAsHtasEdgesDo) {
  // Edges by time: +comp 0, +comm 5, -comp 10, -comm 20, -mem 25, +mem 30. From 25 to 30 the
  // count is negative and no type is credited.
  const std::map<std::string, int64_t> want = {
      {"COMPUTATION", 5}, {"COMPUTATION overlapping COMMUNICATION", 5}, {"COMMUNICATION", 10}};
  EXPECT_EQ(Breakdown({{0, 10}}, {{5, 20}}, {{30, 25}}), want);
}

}  // namespace
}  // namespace trainprof::analysis
