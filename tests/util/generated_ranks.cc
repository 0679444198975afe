#include "util/generated_ranks.h"

#include <gtest/gtest.h>

#include <fstream>

#include "trace/kineto/kineto_reader.h"
#include "util/golden.h"
#include "util/gzip.h"

namespace trainprof::testutil {

AnalysedRanks AnalyseGeneratedRanks(const std::vector<std::pair<GenTrace, GenRank>>& ranks,
                                    bool gzip) {
  AnalysedRanks out;
  const std::string dir = FreshTempDir();
  for (const auto& [spec, rank] : ranks) {
    StatusOr<GeneratedTrace> g = GenerateKinetoTrace(spec, rank);
    EXPECT_TRUE(g.ok()) << g.status().message();
    if (!g.ok()) return out;
    std::string path = dir + "/rank" + std::to_string(rank.rank) + ".pt.trace.json";
    if (gzip) path += ".gz";
    std::ofstream(path, std::ios::binary) << (gzip ? GzipText(g->json) : g->json);
    StatusOr<trace::TraceModel> m = trace::ReadTraceFile(path, {});
    EXPECT_TRUE(m.ok()) << m.status().message();
    if (!m.ok()) return out;
    out.models.push_back(std::move(*m));
    out.expected.push_back(std::move(g->expected));
  }
  analysis::AnalyzeOptions o;
  o.threads = 1;
  out.an = analysis::AnalyzeAll(out.models, o);
  out.report = analysis::BuildAnalyzeReport(out.models, out.an, o, dir);
  return out;
}

}  // namespace trainprof::testutil
