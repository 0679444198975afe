#include "analysis/analyze.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <set>
#include <span>
#include <thread>

#include "analysis/collectives.h"
#include "analysis/critical_path_report.h"
#include "analysis/cross_rank_path.h"
#include "analysis/distributed.h"
#include "analysis/findings.h"
#include "analysis/sections/sections.h"
#include "base/parallel.h"
#include "base/text.h"
#include "report/packed_rows.h"

namespace trainprof::analysis {

namespace {

// The views of the operator tree (the TensorBoard plugin's), and the FLOPs of its operators.
void OperatorViews(const trace::TraceModel& m, const AnalyzeOptions& o, RankAnalysis& a) {
  const OpTree tree = BuildOpTree(m);
  a.operators = OperatorView(m, tree);
  a.operators_by_shape = OperatorViewByShape(m, tree);
  a.operators_by_stack = OperatorViewByStack(m, tree);
  a.kernels = KernelView(m, tree, false);
  a.operator_kernels = KernelView(m, tree, true);
  a.phases = ComputePhases(m, tree, o.dataloader_patterns, o.steps_from);
  a.modules = ModuleView(m, tree);
  a.kernel_sequences = FrequentKernelSequences(m, tree, {});
  a.flops = ComputeFlops(m, tree, a.steps, o.flops);
  a.categories = ComputeCategories(m, tree);
  a.gpu_ns = tree.gpu_ns;
}

// Above this many events a rank's view groups run one after another even with a core to spare:
// two at once hold both groups' working memory. On a 1 GB trace (2.4 million events) that was
// 25-40 MB more at the peak for 10 % less time, and its memory target (150 MB) wins.
constexpr size_t kSplitMaxEvents = size_t{1} << 20;

// The rank's views in groups that share nothing but the model and the steps, the longest
// first (on the V100 trace about 9, 7.5, 4.4, 4 and 1.6 ms). With a core to spare two threads
// take the next group as each finishes: which half weighs more differs by trace.
void RankViews(const trace::TraceModel& m, const AnalyzeOptions& o, const HtaOptions& hta,
               RankAnalysis& a) {
  const std::function<void()> groups[] = {
      [&] { OperatorViews(m, o, a); },
      [&] { a.hta = ComputeHta(m, a.steps, hta); },
      [&] { a.gpus = ComputeGpuSummaries(m, a.steps); },
      [&] { a.overview = ComputeOverview(m, a.steps, o.dataloader_patterns, o.steps_from); },
      [&] {
        a.idle = ComputeIdleCauses(m, a.steps, o.dataloader_patterns, o.steps_from);
        a.memory = MemoryView(m);
        a.memcpy = MemcpyBandwidthByDirection(m);
        a.comm_ops = RankCommOps(m, a.comm_names);
        a.comm_breakdowns = ComputeCommBreakdowns(m, a.steps);
        MarkPath(m, o, a);
      },
  };
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t g = next++; g < std::size(groups); g = next++) groups[g]();
  };
  if (!o.split_lone_rank || m.size() > kSplitMaxEvents) return work();
  std::thread second(work);
  work();
  second.join();
}

}  // namespace

bool LoneRankHasSpareCore(size_t ranks, int threads) {
  const int cores = threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency());
  return ranks == 1 && cores >= 2;
}

RankAnalysis AnalyzeRank(const trace::TraceModel& m, const AnalyzeOptions& o,
                         const HtaOptions& hta) {
  RankAnalysis a;
  a.steps = FindSteps(m, o.steps, o.steps_from);
  RankViews(m, o, hta, a);
  if (a.steps.gpu_data_cut) {  // the cut took the GPU events: no GPU figure is true
    a.gpus.clear();
    a.hta = HtaResult{};
    a.hta.rank = m.rank;
    a.idle = IdleCauses{};
  }
  a.candidates = RankCandidates(m, a, o);
  if (o.critical_path)
    a.critical_paths =
        RankCriticalPaths(m, a, *o.critical_path, {.data_load = o.critical_path_data_load});
  return a;
}

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
    hta.compat_drop_last_step = names.size() >= 2 && !hta.keep_last_step;
  }
  AnalyzeOptions each = o;
  each.split_lone_rank = LoneRankHasSpareCore(models.size(), o.threads);
  base::ParallelFor(models.size(), o.threads,
                    [&](size_t i) { out[i] = AnalyzeRank(models[i], each, hta); });
  return out;
}

namespace {

// The report's sections, in order. A new view: its file, and one line here (one view a line,
// so that adding one is a one-line change).
// clang-format off
constexpr AddViewFn kViews[] = {
    AddOverviewSection,
    AddGpuSection,
    AddHtaSection,
    AddIdleSection,
    AddOperatorSection,
    AddKernelSection,
    AddKernelSequencesSection,
    AddPhaseSection,
    AddModuleSection,
    AddMemorySection,
    AddCategorySection,
    AddMfuSection,
    AddRooflineSection,
    AddMemcpyBandwidthSection,
    AddDistributedView,
    AddCrossRankPathSection,
    AddCriticalPathView,
    AddRecommendationsSection,
};
constexpr AddViewFn kAcrossRanksViews[] = {
    AddOverviewSection,
    AddDistributedView,
    AddCrossRankPathSection,
    AddRecommendationsSection,
};
// clang-format on

// The views that show GPU work only.
constexpr std::string_view kGpuViews[] = {"gpu",
                                          "hta",
                                          "idle_causes",
                                          "kernel_view",
                                          "kernel_sequences",
                                          "categories",
                                          "memcpy_bandwidth"};

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
    if (!gpu && std::ranges::find(kGpuViews, s.id) != std::end(kGpuViews)) {
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

// A csv_only table's rows, made a rank at a time from the analyses when the CSV is written.
class RankRows : public report::RowSource {
 public:
  RankRows(const std::vector<RankAnalysis>& analyses,
           std::shared_ptr<const std::vector<std::string>> labels, RankRowsFn rows_of)
      : analyses_(analyses), labels_(std::move(labels)), rows_of_(std::move(rows_of)) {}
  size_t parts() const override { return analyses_.size(); }
  void AppendRows(size_t part, std::vector<std::vector<report::Value>>& rows) const override {
    rows_of_(analyses_[part], (*labels_)[part], rows);
  }

 private:
  const std::vector<RankAnalysis>& analyses_;
  std::shared_ptr<const std::vector<std::string>> labels_;
  RankRowsFn rows_of_;
};

}  // namespace

void AddRankNotes(std::vector<std::string>& notes, const AnalyzeInput& in,
                  const std::function<std::string(size_t)>& note) {
  std::vector<std::pair<std::string, std::vector<size_t>>> distinct;  // note, its ranks
  for (size_t i = 0; i < in.ranks.size(); ++i) {
    std::string n = note(i);
    if (n.empty()) continue;
    auto same = std::find_if(distinct.begin(), distinct.end(),
                             [&](const auto& d) { return in.ManyRanks() && d.first == n; });
    if (same != distinct.end()) {
      same->second.push_back(i);
      continue;
    }
    distinct.push_back({std::move(n), {i}});
  }
  for (auto& [text, ranks] : distinct) {
    const std::string who =
        ranks.size() == 1
            ? in.RankLabel(ranks[0])
            : fmt::format("{} and {} other ranks", in.RankLabel(ranks[0]), ranks.size() - 1);
    for (size_t at = text.find(kRankMark); at != std::string::npos;
         at = text.find(kRankMark, at + who.size()))
      text.replace(at, kRankMark.size(), who);
    notes.push_back(std::move(text));
  }
}

void AddCoverageMetric(report::Section& s, const AnalyzeInput& in, const std::string& key,
                       const std::string& title,
                       const std::function<int64_t(const RankAnalysis&)>& covered) {
  int64_t gpu = 0, in_view = 0;
  for (const RankAnalysis& a : in.analyses) gpu += a.gpu_ns, in_view += covered(a);
  if (gpu <= 0) return;
  s.AddMetric(key, title, 100.0 * static_cast<double>(in_view) / static_cast<double>(gpu),
              report::Unit::kPercent);
}

void AcrossRanks::Close(Acc& a) {
  Row& r = a.row;
  if (r.ranks == 0 || a.value < r.min) r.min = a.value;
  if (r.ranks == 0 || a.value > r.max) r.max = a.value, r.max_rank = a.rank;
  ++r.ranks;
  a.sum += a.value;
}

void AcrossRanks::Add(const std::string& key, size_t rank, double value) {
  auto [it, added] = index_.try_emplace(key, keys_.size());
  if (added) {
    keys_.push_back({.row = {.key = key}, .rank = rank, .value = value});
    return;
  }
  Acc& a = keys_[it->second];
  if (a.rank == rank) {
    a.value += value;
    return;
  }
  Close(a);
  a.rank = rank;
  a.value = value;
}

std::vector<AcrossRanks::Row> AcrossRanks::Rows() const {
  std::vector<Row> out;
  out.reserve(keys_.size());
  for (Acc a : keys_) {
    Close(a);
    a.row.mean = a.sum / static_cast<double>(a.row.ranks);
    out.push_back(std::move(a.row));
  }
  return out;
}

std::vector<report::Column> AcrossRanks::Columns(const std::string& what) {
  return {{"ranks", "Ranks", report::Unit::kCount},
          {"mean_s", fmt::format("Mean {} per rank", what), report::Unit::kSeconds},
          {"min_s", "Min", report::Unit::kSeconds},
          {"max_s", "Max", report::Unit::kSeconds},
          {"max_rank", "Rank of max", report::Unit::kText}};
}

std::vector<report::Value> AcrossRanks::Cells(const Row& row, const AnalyzeInput& in) {
  return {row.ranks, Seconds(row.mean), Seconds(row.min), Seconds(row.max),
          in.RankLabel(row.max_rank)};
}

bool AnalyzeInput::ManyRanks() const { return ranks.size() > kInlineRanks; }

bool AnalyzeInput::FromNsys() const {
  return !ranks.empty() &&
         std::ranges::all_of(ranks, [](const RankInfo& r) { return r.source == "nsys"; });
}

std::string NoShapesNote(const AnalyzeInput& in, std::string_view lacking) {
  if (!in.AnyPyTorch())
    return fmt::format(
        "No PyTorch operators in this profile, so no input shapes: {}. The program's GPU work is "
        "in the kernel views.",
        lacking);
  if (in.FromNsys())
    return fmt::format(
        "No input shapes in the NVTX ranges: {}. Profile under "
        "torch.autograd.profiler.emit_nvtx(record_shapes=True): its NVTX ranges then carry the "
        "shapes.",
        lacking);
  return fmt::format(
      "No Input Dims in the trace (recorded without record_shapes, or by torch's legacy "
      "profiler, whose export has none): {}. Record with "
      "torch.profiler.profile(record_shapes=True) on a torch built with Kineto.",
      lacking);
}

bool AnalyzeInput::AnyPyTorch() const {
  return std::ranges::any_of(ranks, [](const RankInfo& r) { return r.pytorch; });
}

bool AnalyzeInput::AnyGpuWork() const {
  return std::ranges::any_of(analyses, [](const RankAnalysis& a) { return a.gpu_ns > 0; });
}

report::Table& AddRankTable(report::Section& s, const AnalyzeInput& in, std::string id,
                            std::string title, std::vector<report::Column> cols,
                            report::TableKind kind, RankRowsFn rows_of) {
  report::Table& t = s.AddTable(std::move(id), std::move(title), std::move(cols), kind);
  if (in.ManyRanks()) {
    t.KeepInCsvOnly();
    if (in.stream_rank_tables) {
      t.source = std::make_shared<RankRows>(in.analyses, in.labels, std::move(rows_of));
      return t;
    }
  }
  for (size_t i = 0; i < in.analyses.size(); ++i) rows_of(in.analyses[i], in.RankLabel(i), t.rows);
  return t;
}

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
  const AnalyzeInput in{
      models, an, o, matched->collectives, matched->path, RankLabels(models), stream_rank_tables};
  const std::span<const AddViewFn> adds =
      views == ReportViews::kAll ? std::span<const AddViewFn>(kViews) : kAcrossRanksViews;
  for (AddViewFn add : adds) {
    const size_t first = r.sections.size();
    add(in, r);
    if (in.ManyRanks()) LongTablesToCsv(r, first);
  }
  MarkSectionsWithoutData(in, r);

  for (const auto& m : models)
    r.diagnostics.insert(r.diagnostics.end(), m.diagnostics.begin(), m.diagnostics.end());
  AddMissingRanks(models, input, r);
  return r;
}

}  // namespace trainprof::analysis
