#include "analysis/analyze.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "analysis/critical_path_report.h"
#include "analysis/distributed.h"
#include "analysis/findings.h"
#include "base/parallel.h"
#include "base/text.h"

namespace trainprof::analysis {

using report::Unit;
using report::Value;

std::vector<RankAnalysis> AnalyzeAll(const std::vector<trace::TraceModel>& models,
                                     const AnalyzeOptions& o) {
  std::vector<RankAnalysis> out(models.size());
  HtaOptions hta = o.hta;
  if (hta.hta_compat) {
    // HTA drops the last step only when the traces name at least two distinct steps.
    std::set<std::string> names;
    for (const auto& m : models)
      for (size_t i = 0; i < m.size() && names.size() < 2; ++i)
        if (ProfilerStepNumber(m.name_of(i)) >= 0) names.insert(m.name_of(i));
    hta.compat_drop_last_step = names.size() >= 2;
  }
  base::ParallelFor(models.size(), o.threads, [&](size_t i) {
    RankAnalysis& a = out[i];
    a.steps = FindSteps(models[i], o.steps);
    a.overview = ComputeOverview(models[i], a.steps);
    a.gpus = ComputeGpuSummaries(models[i], a.steps);
    a.hta = ComputeHta(models[i], a.steps, hta);
    if (a.steps.gpu_data_cut) {  // the cut took the GPU events: no GPU figure is true
      a.gpus.clear();
      a.hta = HtaResult{};
      a.hta.rank = models[i].rank;
    }
  });
  return out;
}

namespace {

double Seconds(int64_t ns) { return static_cast<double>(ns) / 1e9; }
double Seconds(double ns) { return ns / 1e9; }

std::string RankLabel(const trace::TraceModel& m, const std::vector<trace::TraceModel>& all) {
  int same = 0;
  for (const auto& o : all) same += o.rank == m.rank;
  if (same <= 1) return fmt::format("{}", m.rank);
  size_t slash = m.path.find_last_of('/');
  return fmt::format("{} ({})", m.rank,
                     slash == std::string::npos ? m.path : m.path.substr(slash + 1));
}

// The run's identity for the run history's config hash: what was read (file names, sizes after
// gunzip, event counts, ranks, devices) and every option that changes a figure. Where the files
// sit, and how many threads read them, are left out: the same trace analysed the same way hashes
// the same from any folder.
void AddAnalyzeConfig(report::Report& r, const std::vector<trace::TraceModel>& models,
                      const AnalyzeOptions& o) {
  std::string files, devices;
  int64_t events = 0, bytes = 0;
  for (const trace::TraceModel& m : models) {
    const size_t slash = m.path.find_last_of('/');
    files += (files.empty() ? "" : ", ") +
             (slash == std::string::npos ? m.path : m.path.substr(slash + 1));
    events += static_cast<int64_t>(m.size());
    bytes += m.json_bytes;
    for (const trace::DeviceInfo& d : m.devices)
      if (!d.name.empty() && devices.find(d.name) == std::string::npos)
        devices += (devices.empty() ? "" : ", ") + d.name;
  }
  r.config.emplace_back("input.files", files);
  r.config.emplace_back("input.json_bytes", bytes);
  r.config.emplace_back("input.events", events);
  r.config.emplace_back("input.ranks", static_cast<int64_t>(models.size()));
  r.config.emplace_back("input.devices", devices);
  r.config.emplace_back("analyze.steps",
                        std::string(o.steps == StepsMode::kAll ? "all" : "complete"));
  r.config.emplace_back("analyze.hta_compat", o.hta.hta_compat);
  r.config.emplace_back("analyze.kernel_wait_us", Seconds(o.hta.consecutive_kernel_delay_ns) * 1e6);
  r.config.emplace_back("analyze.runtime_cutoff_us", Seconds(o.hta.runtime_cutoff_ns) * 1e6);
  r.config.emplace_back("analyze.launch_delay_cutoff_us",
                        Seconds(o.hta.launch_delay_cutoff_ns) * 1e6);
  r.config.emplace_back("analyze.top_kernels", static_cast<int64_t>(o.hta.top_kernels));
  if (!devices.empty()) r.AddMeta("devices", devices);
}

}  // namespace

report::Report BuildAnalyzeReport(const std::vector<trace::TraceModel>& models,
                                  const std::vector<RankAnalysis>& an, const AnalyzeOptions& o,
                                  const std::string& input) {
  report::Report r;
  r.kind = "analyze";
  r.title = fmt::format("trainprof analyze: {}", input);
  r.AddMeta("input", input);
  r.AddMeta("ranks", static_cast<int64_t>(models.size()));
  r.AddMeta("selection", o.hta.hta_compat ? "HTA 0.6.1 compatible" : "analysed steps, exact ns");
  int64_t events = 0, bytes = 0;
  for (const auto& m : models) events += static_cast<int64_t>(m.size()), bytes += m.json_bytes;
  r.AddMeta("events", events, false);
  r.AddMeta("json_bytes", bytes, false);
  AddAnalyzeConfig(r, models, o);

  // --- Overview -------------------------------------------------------------------------
  report::Section& ov = r.AddSection("overview", "Overview (step time breakdown)");
  std::vector<report::Column> cols = {{"rank", "Rank", Unit::kText},
                                      {"step", "Step", Unit::kText},
                                      {"step_time_s", "Step time", Unit::kSeconds}};
  for (int c = 0; c < kNumCategories; ++c)
    cols.push_back({std::string(CategoryKey(c)) + "_s", CategoryTitle(c), Unit::kSeconds});
  report::Table& steps = ov.AddTable("step_breakdown", "Step time breakdown per step", cols);
  std::vector<report::Column> pcols = {{"rank", "Rank", Unit::kText},
                                       {"steps", "Steps", Unit::kCount},
                                       {"step_time_s", "Avg step", Unit::kSeconds}};
  for (int c = 0; c < kNumCategories; ++c)
    pcols.push_back({std::string(CategoryKey(c)) + "_pct", CategoryTitle(c), Unit::kPercent});
  report::Table& avg =
      ov.AddTable("step_breakdown_average", "Average step, share of step time", pcols);
  double all_total = 0;
  int64_t all_steps = 0;
  for (size_t i = 0; i < models.size(); ++i) {
    const Overview& o2 = an[i].overview;
    std::string rank = RankLabel(models[i], models);
    for (const StepBreakdown& b : o2.steps) {
      std::vector<Value> row = {rank, b.step, Seconds(b.total_ns)};
      for (int c = 0; c < kNumCategories; ++c) row.push_back(Seconds(b.ns[c]));
      steps.rows.push_back(std::move(row));
    }
    std::vector<Value> row = {rank, static_cast<int64_t>(o2.steps.size()),
                              Seconds(o2.avg_total_ns)};
    for (int c = 0; c < kNumCategories; ++c)
      row.push_back(o2.avg_total_ns > 0 ? 100 * o2.avg_ns[c] / o2.avg_total_ns : 0.0);
    avg.rows.push_back(std::move(row));
    all_total += o2.avg_total_ns * static_cast<double>(o2.steps.size());
    all_steps += static_cast<int64_t>(o2.steps.size());
    const StepsResult& s = an[i].steps;
    if (!s.dropped.empty())
      ov.notes.push_back(fmt::format(
          "Rank {}: dropped {} as incomplete: its GPU work was not captured (the TensorBoard "
          "plugin's rule; --steps all keeps it).",
          rank, fmt::join(s.dropped, ", ")));
    if (s.gpu_data_cut)
      ov.notes.push_back(fmt::format(
          "Rank {}: the trace file is cut short and part of its GPU events is lost: step times are "
          "the host's, and the GPU categories show only what the cut left.",
          rank));
    if (s.synthetic)
      ov.notes.push_back(
          fmt::format("Rank {}: no ProfilerStep ranges; the whole trace is one step "
                      "(\"all\").",
                      rank));
  }
  if (steps.rows.size() > 40) steps.kind = report::TableKind::kDetail;
  ov.AddMetric("steps", "Steps analysed", all_steps, Unit::kCount);
  if (all_steps > 0)
    ov.AddMetric("avg_step_time_s", "Average step time", all_total / all_steps / 1e9,
                 Unit::kSeconds);

  // --- GPU summary ----------------------------------------------------------------------
  report::Section& gs = r.AddSection("gpu", "GPU summary");
  report::Table& gt =
      gs.AddTable("gpu_summary", "GPU summary (over the steps)",
                  {{"rank", "Rank", Unit::kText},
                   {"device", "GPU", Unit::kCount},
                   {"name", "Name", Unit::kText},
                   {"memory_bytes", "Memory", Unit::kBytes},
                   {"compute_capability", "Compute cap.", Unit::kText},
                   {"kernels", "Kernels", Unit::kCount},
                   {"utilization_pct", "GPU utilization", Unit::kPercent},
                   {"sm_efficiency_pct", "Est. SM efficiency", Unit::kPercent},
                   {"occupancy_pct", "Est. achieved occupancy", Unit::kPercent},
                   {"tensor_core_pct", "Kernel time on Tensor Cores", Unit::kPercent}});
  for (size_t i = 0; i < models.size(); ++i)
    for (const GpuSummary& g : an[i].gpus) {
      auto opt = [](const std::optional<double>& v) -> Value {
        return v ? Value(*v) : Value(std::monostate{});
      };
      Value memory = g.memory_bytes > 0 ? Value(g.memory_bytes) : Value(std::monostate{});
      gt.rows.push_back({RankLabel(models[i], models), g.device, g.name, memory,
                         g.compute_capability, g.kernels, g.utilization_pct,
                         opt(g.sm_efficiency_pct), opt(g.occupancy_pct), g.tensor_core_pct});
    }
  if (gt.rows.empty()) gs.notes.push_back("No GPU kernels in the trace: a CPU-only run.");
  // Headline figures for run history and `trainprof compare`.
  double util_sum = 0;
  int64_t gpus = 0, peak = -1;
  for (size_t i = 0; i < models.size(); ++i) {
    for (const GpuSummary& g : an[i].gpus) util_sum += g.utilization_pct, ++gpus;
    for (const auto& [dev, bytes] : models[i].peak_allocated_bytes) peak = std::max(peak, bytes);
  }
  if (gpus > 0)
    gs.AddMetric("avg_utilization_pct", "GPU utilization (mean over GPUs)",
                 util_sum / static_cast<double>(gpus), Unit::kPercent);
  if (peak >= 0)
    gs.AddMetric("peak_allocated_bytes", "Peak memory allocated (largest GPU, [memory] events)",
                 peak, Unit::kBytes);

  // --- HTA breakdowns -------------------------------------------------------------------
  report::Section& hs = r.AddSection("hta", "HTA breakdowns");
  report::Table& tt = hs.AddTable("temporal_breakdown", "Temporal breakdown (GPU busy span)",
                                  {{"rank", "Rank", Unit::kText},
                                   {"idle_s", "Idle", Unit::kSeconds},
                                   {"compute_s", "Compute", Unit::kSeconds},
                                   {"non_compute_s", "Non-compute", Unit::kSeconds},
                                   {"kernel_span_s", "Kernel span", Unit::kSeconds},
                                   {"idle_pct", "Idle %", Unit::kPercent},
                                   {"compute_pct", "Compute %", Unit::kPercent},
                                   {"non_compute_pct", "Non-compute %", Unit::kPercent}});
  report::Table& it = hs.AddTable("idle_time_breakdown", "Idle time per stream",
                                  {{"rank", "Rank", Unit::kText},
                                   {"stream", "Stream", Unit::kCount},
                                   {"host_wait_s", "Host wait", Unit::kSeconds},
                                   {"kernel_wait_s", "Kernel wait", Unit::kSeconds},
                                   {"other_s", "Other", Unit::kSeconds},
                                   {"host_wait_pct", "Host wait %", Unit::kPercent},
                                   {"idle_intervals", "Idle intervals", Unit::kCount}});
  report::Table& ct =
      hs.AddTable("comm_comp_overlap", "Communication-computation overlap",
                  {{"rank", "Rank", Unit::kText},
                   {"overlap_pct", "Comm. time overlapped by compute", Unit::kPercent}});
  report::Table& lt = hs.AddTable("kernel_launch_stats", "Kernel launch statistics",
                                  {{"rank", "Rank", Unit::kText},
                                   {"launches", "Launches", Unit::kCount},
                                   {"short_kernels", "Short kernels", Unit::kCount},
                                   {"runtime_outliers", "Runtime outliers", Unit::kCount},
                                   {"launch_delay_outliers", "Delay outliers", Unit::kCount},
                                   {"mean_launch_s", "Mean launch", Unit::kSeconds},
                                   {"median_delay_s", "Median delay", Unit::kSeconds},
                                   {"p95_delay_s", "p95 delay", Unit::kSeconds}});
  std::map<std::string, int64_t> types;
  for (size_t i = 0; i < models.size(); ++i) {
    const HtaResult& h = an[i].hta;
    std::string rank = RankLabel(models[i], models);
    const Temporal& t = h.temporal;
    tt.rows.push_back({rank, Seconds(t.idle_ns), Seconds(t.compute_ns), Seconds(t.non_compute_ns),
                       Seconds(t.span_ns), t.pct(t.idle_ns), t.pct(t.compute_ns),
                       t.pct(t.non_compute_ns)});
    std::vector<StreamIdle> idle = h.idle;
    std::sort(idle.begin(), idle.end(),
              [](const StreamIdle& a, const StreamIdle& b) { return a.stream < b.stream; });
    for (const StreamIdle& s : idle) {
      int64_t sum = s.ns[0] + s.ns[1] + s.ns[2];
      it.rows.push_back({rank, s.stream, Seconds(s.ns[kHostWait]), Seconds(s.ns[kKernelWait]),
                         Seconds(s.ns[kIdleOther]), sum > 0 ? 100.0 * s.ns[kHostWait] / sum : 0.0,
                         s.gaps[0] + s.gaps[1] + s.gaps[2]});
    }
    if (h.has_communication) ct.rows.push_back({rank, h.comm_comp_overlap_pct});
    const LaunchStats& l = h.launch;
    lt.rows.push_back({rank, l.launches, l.short_kernels, l.runtime_outliers,
                       l.launch_delay_outliers, Seconds(l.mean_launch_ns),
                       Seconds(l.median_delay_ns), Seconds(l.p95_delay_ns)});
    for (const auto& [label, ns] : h.kernel_types) types[label] += ns;
  }
  if (ct.rows.empty()) hs.notes.push_back("No communication kernels: no overlap to measure.");
  it.notes.push_back(fmt::format(
      "Host wait: the GPU was free before the CPU launched the next kernel. Kernel wait: a gap "
      "under {} µs between back-to-back kernels.",
      o.hta.consecutive_kernel_delay_ns / 1000));
  lt.notes.push_back(fmt::format(
      "Short: GPU time under the launch call's time (calls <= {} µs). Runtime outliers: calls "
      "over {} µs. Delay: launch call end to GPU start; outliers over {} µs.",
      o.hta.runtime_cutoff_ns / 1000, o.hta.runtime_cutoff_ns / 1000,
      o.hta.launch_delay_cutoff_ns / 1000));

  report::Table& kt = hs.AddTable("kernel_type_breakdown", "Kernel type breakdown (all ranks)",
                                  {{"kernel_type", "Kernel type", Unit::kText},
                                   {"time_s", "Time", Unit::kSeconds},
                                   {"pct", "Share", Unit::kPercent}});
  int64_t type_sum = 0;
  for (const auto& [label, ns] : types) type_sum += ns;
  std::vector<std::pair<std::string, int64_t>> sorted(types.begin(), types.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  for (const auto& [label, ns] : sorted)
    kt.rows.push_back({label, Seconds(ns), type_sum > 0 ? 100.0 * ns / type_sum : 0.0});

  report::Table& top = hs.AddTable("top_kernels", "Top kernels per type",
                                   {{"rank", "Rank", Unit::kText},
                                    {"kernel_type", "Type", Unit::kText},
                                    {"name", "Kernel", Unit::kText},
                                    {"count", "Count", Unit::kCount},
                                    {"sum_s", "Total", Unit::kSeconds},
                                    {"mean_s", "Mean", Unit::kSeconds},
                                    {"min_s", "Min", Unit::kSeconds},
                                    {"max_s", "Max", Unit::kSeconds},
                                    {"std_s", "Std dev", Unit::kSeconds}});
  for (size_t i = 0; i < models.size(); ++i)
    for (const KernelStats& k : an[i].hta.top_kernels) {
      top.rows.push_back({RankLabel(models[i], models), std::string(KernelTypeName(k.type)),
                          base::Ellipsize(k.name, 90), k.count, Seconds(k.sum_ns),
                          Seconds(k.mean_ns), Seconds(k.min_ns), Seconds(k.max_ns),
                          Seconds(k.std_ns)});
    }
  if (top.rows.size() > 40) top.kind = report::TableKind::kDetail;

  const CollectivesResult collectives = MatchCollectives(models);
  AddDistributedSection(models, an, collectives, r);
  if (o.critical_path) AddCriticalPathSection(models, an, *o.critical_path, r);
  report::Section& rec = r.AddSection("recommendations", "Recommendations");
  AddFindings(models, an, o, rec, &collectives);

  for (const auto& m : models)
    for (const trace::InputDiagnostic& d : m.diagnostics) {
      report::Severity s = report::SeverityFor(d.severity);
      r.diagnostics.push_back({s, d.name, d.count, d.message});
    }
  return r;
}

}  // namespace trainprof::analysis
