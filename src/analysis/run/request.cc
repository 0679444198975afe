#include "analysis/run/request.h"

#include <fmt/format.h>

#include "analysis/analyze.h"
#include "analysis/rank_summary.h"
#include "analysis/ranks/critical_path_report.h"
#include "analysis/ranks/cross_rank_path.h"
#include "analysis/ranks/distributed.h"
#include "trace/chrome_trace_writer.h"

namespace trainprof::analysis {

AnalyzeOptions ToOptions(const AnalyzeRequest& r) {
  AnalyzeOptions o;
  o.steps = r.steps == "all" ? StepsMode::kAll : StepsMode::kComplete;
  o.hta.hta_compat = r.hta_compat;
  o.hta.keep_last_step = r.hta_last_step;
  o.hta.consecutive_kernel_delay_ns = static_cast<int64_t>(r.kernel_wait_us * 1000);
  o.hta.runtime_cutoff_ns = static_cast<int64_t>(r.runtime_cutoff_us * 1000);
  o.hta.launch_delay_cutoff_ns = static_cast<int64_t>(r.launch_delay_cutoff_us * 1000);
  o.hta.top_kernels = r.top_kernels;
  o.hta.duration_ratio = r.hta_duration_ratio;
  o.dataloader_patterns = r.dataloader_patterns;
  o.steps_from = r.steps_from;
  o.flops.peak_tflops = r.peak_tflops;
  o.flops.peak_tbps = r.peak_tbps;
  o.threads = r.threads;
  o.critical_path = r.critical_path;
  o.critical_path_data_load = r.data_load_events;
  o.critical_path_all_edges = r.critical_path_all_edges;
  return o;
}

namespace {

// The clock offsets estimated from collective ends, one per rank, when they can be trusted
// (distributed.h's MatchDoubtful); else none.
std::vector<int64_t> AlignedOffsets(const CollectivesResult& c) {
  std::vector<int64_t> out;
  if (c.collectives.empty() || MatchDoubtful(c)) return out;
  for (const ClockOffset& o : c.offsets) out.push_back(o.offset_ns);
  return out;
}

}  // namespace

report::ExtraFile CriticalPathTraceFile(const Summaries& s, std::shared_ptr<const RanksMatched> m,
                                        const std::string& dir) {
  if (m == nullptr) m = MatchRanks(s.ranks, s.analyses);
  return {"critical_path.trace.json", [&s, m, dir]() -> Status {
            trace::ChromeTraceWriter w;
            TRAINPROF_RETURN_IF_ERROR(w.Open(dir + "/critical_path.trace.json"));
            WriteCriticalPathTrace(s.ranks, s.analyses, AlignedOffsets(m->collectives), w);
            return w.Close();
          }};
}

namespace {

// cross_rank_path.trace.json when two ranks or more ran collectives and the path was walked.
void AddCrossRankPathFile(const Summaries& s, std::shared_ptr<const RanksMatched> m,
                          const std::string& dir, std::vector<report::ExtraFile>& extra) {
  if (s.ranks.size() < 2 || !m->path.note.empty() || m->path.segments.empty()) return;
  const std::string path = dir + "/cross_rank_path.trace.json";
  extra.push_back({"cross_rank_path.trace.json", [&s, m, path]() -> Status {
                     trace::ChromeTraceWriter w;
                     TRAINPROF_RETURN_IF_ERROR(w.Open(path));
                     WriteCrossRankPathTrace(s.ranks, m->collectives, m->path, w);
                     return w.Close();
                   }});
}

}  // namespace

report::ExtrasFor RunExtras(const Summaries& s, std::shared_ptr<const RanksMatched> m) {
  if (m == nullptr) m = MatchRanks(s.ranks, s.analyses);
  return [&s, m](const std::string& dir) {
    std::vector<report::ExtraFile> extra;
    if (s.options.critical_path) extra.push_back(CriticalPathTraceFile(s, m, dir));
    AddCrossRankPathFile(s, m, dir, extra);
    return extra;
  };
}

}  // namespace trainprof::analysis
