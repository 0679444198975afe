// The "recommendations" section: findings.h's rules, merged across ranks and ranked.
#include "analysis/findings.h"
#include "analysis/sections/sections.h"

namespace trainprof::analysis {

void AddRecommendationsSection(const AnalyzeInput& in, report::Report& r) {
  report::Section& rec = r.AddSection("recommendations", "Recommendations");
  AddFindings(in.ranks, in.analyses, in.options, rec, in.collectives, in.cross_path);
}

}  // namespace trainprof::analysis
