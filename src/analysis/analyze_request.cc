#include "analysis/analyze_request.h"

#include <fmt/format.h>

#include <optional>

#include "analysis/analyze.h"
#include "analysis/critical_path_report.h"
#include "analysis/distributed.h"
#include "report/data_quality.h"
#include "trace/chrome_trace_writer.h"
#include "trace/trace_files.h"

namespace trainprof::analysis {

AnalyzeOptions ToOptions(const AnalyzeRequest& r) {
  AnalyzeOptions o;
  o.steps = r.steps == "all" ? StepsMode::kAll : StepsMode::kComplete;
  o.hta.hta_compat = r.hta_compat;
  o.hta.consecutive_kernel_delay_ns = static_cast<int64_t>(r.kernel_wait_us * 1000);
  o.hta.runtime_cutoff_ns = static_cast<int64_t>(r.runtime_cutoff_us * 1000);
  o.hta.launch_delay_cutoff_ns = static_cast<int64_t>(r.launch_delay_cutoff_us * 1000);
  o.hta.top_kernels = r.top_kernels;
  o.dataloader_patterns = r.dataloader_patterns;
  o.flops.peak_tflops = r.peak_tflops;
  o.flops.peak_tbps = r.peak_tbps;
  o.threads = r.threads;
  if (r.critical_path_given) o.critical_path = r.critical_path;
  return o;
}

std::vector<StatusOr<RankSummary>> SummariseFiles(
    const std::vector<std::string>& files, const AnalyzeRequest& r, const std::string& input,
    const std::function<void(int64_t, int64_t)>& progress, const ModelHook& hook) {
  AnalyzeOptions o = ToOptions(r);
  o.split_lone_rank = LoneRankHasSpareCore(files.size(), r.threads);
  std::vector<std::optional<StatusOr<RankSummary>>> results(files.size());
  trace::ReadManyOptions ro;
  ro.threads = r.threads;
  ro.progress = progress;
  ro.capture_traces = r.capture_traces;
  trace::ForEachTraceFile(files, ro, [&](size_t i, StatusOr<trace::TraceModel> m) {
    if (!m.ok()) {
      results[i].emplace(m.status());
      return;
    }
    RankSummary s = SummariseRank(*m, o, input);
    if (hook) hook(i, *m, s);
    results[i].emplace(std::move(s));
  });
  std::vector<StatusOr<RankSummary>> out;
  out.reserve(files.size());
  for (auto& res : results) out.push_back(std::move(*res));
  return out;
}

StatusOr<std::vector<RankSummary>> KeepReadSummaries(std::vector<StatusOr<RankSummary>> results,
                                                     std::vector<std::string>* skipped) {
  std::vector<RankSummary> out;
  Status first = Status::Ok();
  for (auto& r : results) {
    if (r.ok()) {
      out.push_back(std::move(*r));
      continue;
    }
    if (skipped == nullptr) return r.status();
    if (first.ok()) first = r.status();
    skipped->push_back(fmt::format("{} (file skipped)", r.status().message()));
  }
  if (out.empty() && !first.ok()) return first;
  return out;
}

std::string NothingToAnalyse(const Summaries& s, const std::string& what,
                             const std::string& steps_flag) {
  size_t events = 0, steps = 0;
  for (const RankInfo& m : s.ranks) events += m.size();
  for (const RankAnalysis& a : s.analyses) steps += a.steps.steps.size();
  if (events == 0) {
    return fmt::format(
        "{}: nothing to analyse: the trace holds no events (was the profiler "
        "stopped before its first active step?)",
        what);
  }
  if (steps == 0) {
    return fmt::format(
        "{}: nothing to analyse: no step with events was kept{}", what,
        steps_flag == "complete" ? " (every step lacks its GPU work; --steps all keeps them)" : "");
  }
  return "";
}

report::Report BuildRunReport(const Summaries& s, const std::vector<std::string>& files,
                              const std::vector<std::string>& skipped, bool stream_rank_tables) {
  report::Report r =
      BuildAnalyzeReport(s.ranks, s.analyses, s.options, s.input, stream_rank_tables);
  for (size_t i = 0; i < files.size(); ++i) r.AddMeta(fmt::format("files.{}", i), files[i], false);
  for (const std::string& why : skipped)
    r.diagnostics.push_back({report::DiagnosticId::kInputSkipped, 1, why});
  report::AddDataQualitySection(r);
  return r;
}

namespace {

// The clock offsets estimated from collective ends, one per rank, when they can be trusted
// (distributed.h's MatchDoubtful); else none.
std::vector<int64_t> AlignedOffsets(const Summaries& s) {
  const CollectivesResult c = MatchCollectives(s.ranks, s.analyses);
  std::vector<int64_t> out;
  if (c.collectives.empty() || MatchDoubtful(c)) return out;
  for (const ClockOffset& o : c.offsets) out.push_back(o.offset_ns);
  return out;
}

}  // namespace

report::ExtraFile CriticalPathTraceFile(const Summaries& s, const std::string& dir) {
  return {"critical_path.trace.json", [&s, dir]() -> Status {
            trace::ChromeTraceWriter w;
            TRAINPROF_RETURN_IF_ERROR(w.Open(dir + "/critical_path.trace.json"));
            WriteCriticalPathTrace(s.ranks, s.analyses, AlignedOffsets(s), w);
            return w.Close();
          }};
}

}  // namespace trainprof::analysis
