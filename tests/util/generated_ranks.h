// Generated Kineto traces (util/trace_gen.h) written one file per rank, read back by the reader
// and analysed: what the tests of the analyses on generated traces start from.
//
//   AnalysedRanks r = AnalyseGeneratedRanks({{spec, {.rank = 0}}, {spec, {.rank = 1}}});
//   EXPECT_EQ(r.models.size(), 2u);   // r.expected[i] holds rank i's known answers
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "analysis/analyze.h"
#include "trace/trace_model.h"
#include "util/trace_gen.h"

namespace trainprof::testutil {

struct AnalysedRanks {
  std::vector<Expected> expected;
  std::vector<trace::TraceModel> models;
  std::vector<analysis::RankAnalysis> an;
  report::Report report;
};

// Each (trace, rank) generated and written as rank<N>.pt.trace.json (.gz when `gzip`) into a
// fresh folder, read back and analysed on one thread. A generator or reader error is a test
// failure, and the result then holds the ranks before it, unanalysed.
AnalysedRanks AnalyseGeneratedRanks(const std::vector<std::pair<GenTrace, GenRank>>& ranks,
                                    bool gzip = false);

}  // namespace trainprof::testutil
