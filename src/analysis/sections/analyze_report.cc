// BuildAnalyzeReport (analyze.h): every section of `trainprof analyze` from the list below, in
// order, then the report's config, the ranks' labels and what no rank had data for.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <span>

#include "analysis/analyze.h"
#include "analysis/findings.h"
#include "analysis/ranks/critical_path_report.h"
#include "analysis/ranks/cross_rank_path.h"
#include "analysis/ranks/distributed.h"
#include "analysis/sections/sections.h"
#include "base/text.h"
#include "report/packed_rows.h"

namespace trainprof::analysis {

namespace {

bool NothingToShow(const report::Section& s) {
  return !s.notes.empty() && s.metrics.empty() && s.findings.empty() &&
         std::ranges::all_of(s.tables,
                             [](const report::Table& t) { return t.rows.empty() && !t.csv_only; });
}

// A section with nothing to show is one line saying why (the terminal and report.html; report.json
// keeps its tables): in a trace without GPU work, each GPU view; else a view whose tables are all
// empty, by its first note.
void MarkSectionsWithoutData(const AnalyzeInput& in, report::Report& r) {
  const bool gpu = in.AnyGpuWork();
  for (report::Section& s : r.sections) {
    const SectionDescriptor* d = FindSection(s.id);
    if (!gpu && d != nullptr && d->gpu_only) {
      s.no_data =
          "No GPU work in the trace: a CPU-only run (torch without CUDA, or a legacy "
          "profiler trace), so nothing to show here.";
    } else if (NothingToShow(s)) {
      s.no_data = s.notes.front();
    }
  }
}

// The run's identity for the run history's config hash: what was read (file names, sizes after
// gunzip, event counts, ranks, devices) and every option that changes a figure. Where the files
// sit, and how many threads read them, are left out: the same trace analysed the same way hashes
// the same from any folder.
void AddAnalyzeConfig(report::Report& r, const std::vector<RankInfo>& models,
                      const AnalyzeOptions& o) {
  std::string files, devices;
  int64_t events = 0, bytes = 0;
  for (const RankInfo& m : models) {
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
  if (o.hta.duration_ratio != HtaOptions{}.duration_ratio)  // new: older reports stay as they were
    r.config.emplace_back("analyze.hta_duration_ratio", o.hta.duration_ratio);
  if (o.flops.peak_tflops > 0) r.config.emplace_back("analyze.peak_tflops", o.flops.peak_tflops);
  if (!o.dataloader_patterns.empty())
    r.config.emplace_back("analyze.dataloader_patterns",
                          fmt::format("{}", fmt::join(o.dataloader_patterns, ", ")));
  if (!devices.empty()) r.AddMeta("devices", devices);
}

}  // namespace

namespace {

// The last `k` components of a path ("h100/trace.json" for k = 2).
std::string PathTail(const std::string& path, int k) {
  size_t at = path.size();
  for (int i = 0; i < k && at != std::string::npos && at > 0; ++i) at = path.rfind('/', at - 1);
  return at == std::string::npos || at == 0 ? path : path.substr(at + 1);
}

// "3", or "3 (h100/trace.json)" when two models share a rank: as many of the path's last
// components as tell the files of one rank number apart.
std::shared_ptr<const std::vector<std::string>> RankLabels(const std::vector<RankInfo>& ranks) {
  std::map<int64_t, std::vector<size_t>> same;
  for (size_t i = 0; i < ranks.size(); ++i) same[ranks[i].rank].push_back(i);
  auto out = std::make_shared<std::vector<std::string>>(ranks.size());
  for (const auto& [rank, members] : same) {
    if (members.size() == 1) {
      (*out)[members[0]] = fmt::format("{}", rank);
      continue;
    }
    for (int k = 1; k <= 8; ++k) {
      std::set<std::string> seen;
      for (size_t i : members) seen.insert(PathTail(ranks[i].path, k));
      if (seen.size() == members.size() || k == 8) {
        for (size_t i : members)
          (*out)[i] = fmt::format("{} ({})", rank, PathTail(ranks[i].path, k));
        break;
      }
    }
  }
  return out;
}

}  // namespace

namespace {

// With many ranks, each table of the sections from `first` on with more rows than
// kMaxJsonRowsManyRanks is in its CSV only, its rows packed as soon as its view is built, so the
// views' tables are never all held as values at once.
void LongTablesToCsv(report::Report& r, size_t first) {
  for (size_t i = first; i < r.sections.size(); ++i) {
    for (report::Table& t : r.sections[i].tables) {
      if (t.rows.size() <= kMaxJsonRowsManyRanks) continue;
      t.KeepInCsvOnly();
      report::PackRows(t);
    }
  }
}

// The ranks the traces' world size names that no trace is for, when two or more were given: a
// "missing_ranks" diagnostic.
void AddMissingRanks(const std::vector<RankInfo>& models, const std::string& input,
                     report::Report& r) {
  int64_t world = 0;
  std::set<int64_t> present;
  for (const RankInfo& m : models) world = std::max(world, m.world_size), present.insert(m.rank);
  if (world <= 1 || models.size() < 2) return;  // one rank's file is read as it is
  std::vector<int64_t> missing;
  for (int64_t k = 0; k < world; ++k)
    if (!present.count(k)) missing.push_back(k);
  if (missing.empty()) return;
  r.diagnostics.push_back({base::DiagnosticId::kMissingRanks, static_cast<int64_t>(missing.size()),
                           fmt::format("{}: {} of the world's {} ranks have no trace: {}", input,
                                       missing.size(), world, RankRanges(missing))});
}

}  // namespace

report::Report BuildAnalyzeReport(const std::vector<trace::TraceModel>& models,
                                  const std::vector<RankAnalysis>& an, const AnalyzeOptions& o,
                                  const std::string& input) {
  return BuildAnalyzeReport(InfosOf(models), an, o, input);
}

report::Report BuildAnalyzeReport(const std::vector<RankInfo>& models,
                                  const std::vector<RankAnalysis>& an, const AnalyzeOptions& o,
                                  const std::string& input, bool stream_rank_tables,
                                  ReportViews views, std::shared_ptr<const RanksMatched> matched) {
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

  if (matched == nullptr) matched = MatchRanks(models, an);
  const AnalyzeInput in{models,
                        an,
                        o,
                        matched->collectives,
                        matched->path,
                        RankLabels(models),
                        stream_rank_tables,
                        ReadTablesOnce(an)};
  for (const SectionDescriptor& d : AnalyzeSections()) {
    if (views != ReportViews::kAll && !d.across_ranks) continue;
    const size_t first = r.sections.size();
    d.add(in, r);
    if (in.ManyRanks()) LongTablesToCsv(r, first);
  }
  MarkSectionsWithoutData(in, r);

  for (const auto& m : models)
    r.diagnostics.insert(r.diagnostics.end(), m.diagnostics.begin(), m.diagnostics.end());
  AddMissingRanks(models, input, r);
  return r;
}

}  // namespace trainprof::analysis
