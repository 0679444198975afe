// The sections of `trainprof analyze`'s report: one function per section, each in a
// `*_section.cc` file of this folder, all called in order from the list in analyze_report.cc.
// A new view is a new file with one `AddXxxSection` and one line in that list
// (docs/architecture.md). Sections read the computations of analysis/; nothing there includes
// this folder (scripts/check-includes.py).
//
//   void AddThingSection(const AnalyzeInput& in, report::Report& r) {
//     report::Section& s = r.AddSection("thing", "Thing view");
//     for (size_t i = 0; i < in.ranks.size(); ++i) ... in.RankLabel(i) ...
//   }
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analysis/rank_analysis.h"
#include "analysis/ranks/collectives.h"
#include "analysis/ranks/cross_rank_path.h"
#include "analysis/units.h"
#include "report/report.h"
#include "trace/trace_model.h"

namespace trainprof::analysis {

// What every view reads: the ranks' infos, their analyses (same order), the options, and the
// collectives matched across ranks. No view sees a TraceModel: what it needs from the events is
// computed per rank in AnalyzeRank, so the report can be built from summaries (rank_summary.h).
struct AnalyzeInput {
  const std::vector<RankInfo>& ranks;
  const std::vector<RankAnalysis>& analyses;
  const AnalyzeOptions& options;
  const CollectivesResult& collectives;
  const CrossRankPath& cross_path;  // walked once from `collectives` (cross_rank_path.h)
  // Each rank's label (RankLabel), made once: a section asks for it per row.
  std::shared_ptr<const std::vector<std::string>> labels;
  // With more than kInlineRanks ranks: whether per-rank tables read `analyses` only when their
  // CSV is written (BuildAnalyzeReport's `stream_rank_tables`).
  bool stream_rank_tables = false;
  // Up to kMaxJsonRowsManyRanks ranks whose tables wait in a scratch file (RankTables): each
  // rank's, read back once for the whole report (ReadTablesOnce); else null, and each reader
  // reads a rank's back as it goes (a few MB for a thousand ranks; ten thousand would keep 25).
  std::shared_ptr<const std::vector<RankTables>> tables;

  // "3", or "3 (file.json)" when two models share a rank.
  const std::string& RankLabel(size_t i) const { return (*labels)[i]; }
  // More ranks than report.json holds per-rank detail for (AddRankTable).
  bool ManyRanks() const;
  // Every rank was read from an Nsight Systems export: what to record is said in nsys's words.
  bool FromNsys() const;
  // Some rank profiles a PyTorch program (RankInfo::pytorch); else advice names no PyTorch API.
  bool AnyPyTorch() const;
  // Some rank has GPU work (RankAnalysis::gpu_ns); else a CPU-only run.
  bool AnyGpuWork() const;
  // Rank i's tables: from `tables` when read once, else TablesOf (ranks/detail_store.h).
  const RankTables& TablesAt(size_t i, RankTables& scratch) const;
};

// `tables` for AnalyzeInput: every rank's read back from its scratch file when some rank's wait
// there and there are at most kMaxJsonRowsManyRanks ranks; else null.
std::shared_ptr<const std::vector<RankTables>> ReadTablesOnce(
    const std::vector<RankAnalysis>& analyses);

// The note of a view that needs input shapes and has none: "No Input Dims ...: <lacking>. Record
// with ..." in the words of the input (a torch.profiler trace, an Nsight profile of PyTorch, or a
// program without PyTorch, which has no operators with shapes). `lacking`: "no FLOPs or bytes per
// shape".
std::string NoShapesNote(const AnalyzeInput& in, std::string_view lacking);

// Up to this many ranks (a node's GPUs), report.json holds every per-rank table whole; with
// more, per-rank detail is in CSV files only and report.json keeps the cross-rank summary.
inline constexpr size_t kInlineRanks = 8;
// With more than kInlineRanks ranks, a table of more rows than this (one row per rank and step,
// or per rank in a large world) is in its CSV only too, so report.json stays small at any scale.
inline constexpr size_t kMaxJsonRowsManyRanks = 1000;

// A rank's rows of a per-rank table, appended to `rows` (`rank`: its label).
using RankRowsFn = std::function<void(const RankAnalysis& a, const std::string& rank,
                                      std::vector<std::vector<report::Value>>& rows)>;

// A table of `rows_of` each rank, in rank order. With up to kInlineRanks ranks its rows are in
// `rows` as any table's; with more it is a report::Table::csv_only table of kind kDetail (or
// kSeries), whose rows are made now, or, with in.stream_rank_tables, one rank at a time when its
// CSV is written (reading in.analyses then). `rows_of` must not hold references to `in`.
// `detail`: whether `rows_of` reads the lists a rank's detail holds (ranks/detail_store.h);
// rows that do not are read without it, also after the CSV files let it go (the run history
// reads step_breakdown then). kTables: it reads the rank's tables (TablesOf) and nothing else
// of its detail, so it needs no hold, but its CSV is written with the detail's (before a
// rank's record goes).
enum class RankDetail { kRead, kNotRead, kTables };
report::Table& AddRankTable(report::Section& s, const AnalyzeInput& in, std::string id,
                            std::string title, std::vector<report::Column> cols,
                            report::TableKind kind, RankRowsFn rows_of,
                            RankDetail detail = RankDetail::kRead);

// A table of a few rows per rank (one, or one per device, stream or step: the figures ranks are
// compared by) of what a rank keeps besides its detail, or of its tables (`detail` kTables):
// like any table's, its rows are made now (in report.json up to kMaxJsonRowsManyRanks rows), but
// with more ranks than that it is in its CSV only, made a rank at a time as AddRankTable's with
// in.stream_rank_tables, so that a report of a hundred thousand ranks never holds them all.
report::Table& AddRankSummaryTable(report::Section& s, const AnalyzeInput& in, std::string id,
                                   std::string title, std::vector<report::Column> cols,
                                   RankRowsFn rows_of,
                                   report::TableKind kind = report::TableKind::kTable,
                                   RankDetail detail = RankDetail::kNotRead);

// A rank's rows of a table of its tables (RankTables), appended to `rows` (`rank`: its label).
using RankTablesRowsFn = std::function<void(const RankTables& t, const std::string& rank,
                                            std::vector<std::vector<report::Value>>& rows)>;

// AddRankSummaryTable of the ranks' tables: `rows_of` gets each rank's, read back when they wait
// in a scratch file (TablesOf).
report::Table& AddRankTablesTable(report::Section& s, const AnalyzeInput& in, std::string id,
                                  std::string title, std::vector<report::Column> cols,
                                  RankTablesRowsFn rows_of,
                                  report::TableKind kind = report::TableKind::kTable);

// `f(i, tables)` for each rank i in order, its tables read back when they wait in a scratch
// file (TablesOf); AnyRankTables stops at the first rank whose tables `pred` holds for.
void ForEachRankTables(const AnalyzeInput& in,
                       const std::function<void(size_t, const RankTables&)>& f);
bool AnyRankTables(const AnalyzeInput& in, const std::function<bool(const RankTables&)>& pred);

using AddViewFn = void (*)(const AnalyzeInput& in, report::Report& r);

// One section of the analyze report (section_list.cc holds them, in report order).
struct SectionDescriptor {
  std::string_view id;        // the report section's id: "gpu"
  AddViewFn add;              // adds it (and nothing else)
  bool gpu_only = false;      // it shows GPU work only: a CPU-only run says so instead
  bool across_ranks = false;  // a report across ranks (merge --step-range) has it too
  std::string_view doc;       // its heading in docs/trace-analysis.md; "" for none
};
const std::vector<SectionDescriptor>& AnalyzeSections();
const SectionDescriptor* FindSection(std::string_view id);  // nullptr for none

// "docs/trace-analysis.md, section \"GPU summary\"": where a report section of analyze (or of
// diff, or the data-quality section) is explained; "" for a section the doc has no heading for.
std::string DocOfSection(std::string_view section_id);

// The first `n` rows that a stable sort by `before` puts first of every rank's rows, ranks added
// in ascending order (ties: the lower rank, then the earlier row), kept as copies: a pass across
// ranks reads each rank's list back alone (ranks/detail_store.h) and lets it go, and a top table
// of many ranks takes a few rows of hundreds of thousands.
//
//   TopRows<KernelRow> top(15, [](const KernelRow& a, const KernelRow& b) { ... });
//   for (size_t i = 0; i < n; ++i) top.Add(KernelsOf(analyses[i], scratch), i);
//   for (const auto& [row, rank] : top.rows()) ...
template <class Row>
class TopRows {
 public:
  using Before = std::function<bool(const Row&, const Row&)>;
  TopRows(size_t n, Before before) : n_(n), before_(std::move(before)) {}
  void Add(const std::vector<Row>& rows, size_t rank) {
    for (const Row& r : rows) {
      any_ = true;
      if (n_ == 0 || (top_.size() == n_ && !before_(r, top_.back().first))) continue;
      auto at = std::upper_bound(
          top_.begin(), top_.end(), r,
          [this](const Row& x, const auto& kept) { return before_(x, kept.first); });
      top_.insert(at, {r, rank});
      if (top_.size() > n_) top_.pop_back();
    }
  }
  const std::vector<std::pair<Row, size_t>>& rows() const { return top_; }  // (row, rank index)
  bool any() const { return any_; }                                         // some rank had a row

 private:
  size_t n_;
  Before before_;
  std::vector<std::pair<Row, size_t>> top_;
  bool any_ = false;
};

// A table longer than a terminal screen is kept for the CSV, report.json and report.html only.
inline void MarkLong(report::Table& t) { t.MarkLong(); }

// The cross-rank summary of a per-rank figure: each rank's value of each key (summed when a
// rank has a key twice), then per key, in order of first appearance, how many ranks have it,
// its mean over them, its least and greatest value and the rank of the greatest (the first such).
//
//   AcrossRanks a;
//   for (size_t i = 0; i < n; ++i) for (const auto& m : modules[i]) a.Add(m.path, i, m.device_s);
//   for (const AcrossRanks::Row& row : a.Rows()) ...
class AcrossRanks {
 public:
  struct Row {
    std::string key;
    int64_t ranks = 0;
    double mean = 0, min = 0, max = 0;
    size_t max_rank = 0;  // index into the ranks
  };
  // Ranks come in ascending order (a key's values of one rank are added together).
  void Add(const std::string& key, size_t rank, double value);
  std::vector<Row> Rows() const;
  // The table's figure columns, after its key columns: ranks, mean_s, min_s, max_s, max_rank.
  static std::vector<report::Column> Columns(const std::string& what);
  // A row's figure cells (seconds from ns), in Columns' order.
  static std::vector<report::Value> Cells(const Row& row, const AnalyzeInput& in);

 private:
  struct Acc {
    Row row;
    size_t rank = 0;  // the rank whose value is being added up
    double value = 0;
    double sum = 0;
  };
  static void Close(Acc& a);
  std::vector<Acc> keys_;
  std::unordered_map<std::string, size_t> index_;
};

// The share of the ranks' GPU time (RankAnalysis::gpu_ns) that `covered(a)` holds, as metric
// `key` of `s`: the part of the GPU work a view puts under its rows. None when the trace has no
// GPU work.
void AddCoverageMetric(report::Section& s, const AnalyzeInput& in, const std::string& key,
                       const std::string& title,
                       const std::function<int64_t(const RankAnalysis&)>& covered);
// The same when a pass across ranks has summed what the view covers: `covered_ns` of all ranks.
void AddCoverageMetric(report::Section& s, const AnalyzeInput& in, const std::string& key,
                       const std::string& title, int64_t covered_ns);

// Where a per-rank note names its rank (AddRankNotes).
inline constexpr std::string_view kRankMark = "\x01";

// Per-rank notes: `note(i)` is rank i's note, with kRankMark where its rank goes, or "" for none.
// Up to kInlineRanks ranks, each rank's note in rank order; with more, each distinct note once,
// in order of first appearance, naming its first rank and how many others share it ("Rank 0
// and 999 other ranks: ..."), and at most kMostRankNotes of them: the ranks of the notes past
// those are named in one last note, which says their figures are in `figures_in` (when not
// ""), so 10,000 ranks whose notes differ by a figure are not 10,000 lines.
inline constexpr size_t kMostRankNotes = 8;
void AddRankNotes(std::vector<std::string>& notes, const AnalyzeInput& in,
                  const std::function<std::string(size_t)>& note, std::string_view figures_in = "");

void AddOverviewSection(const AnalyzeInput& in, report::Report& r);  // overview_section.cc
void AddGpuSection(const AnalyzeInput& in, report::Report& r);       // gpu_section.cc
void AddHtaSection(const AnalyzeInput& in, report::Report& r);       // hta_section.cc
void AddIdleSection(const AnalyzeInput& in, report::Report& r);      // idle_section.cc
void AddOperatorSection(const AnalyzeInput& in, report::Report& r);  // operator_section.cc
void AddKernelSection(const AnalyzeInput& in, report::Report& r);    // operator_section.cc
void AddKernelSequencesSection(const AnalyzeInput& in,
                               report::Report& r);                   // kernel_sequences_section.cc
void AddPhaseSection(const AnalyzeInput& in, report::Report& r);     // phase_section.cc
void AddModuleSection(const AnalyzeInput& in, report::Report& r);    // module_section.cc
void AddMemorySection(const AnalyzeInput& in, report::Report& r);    // memory_section.cc
void AddCategorySection(const AnalyzeInput& in, report::Report& r);  // category_section.cc
void AddMfuSection(const AnalyzeInput& in, report::Report& r);       // mfu_section.cc
void AddRooflineSection(const AnalyzeInput& in, report::Report& r);  // roofline_section.cc
void AddMemcpyBandwidthSection(const AnalyzeInput& in, report::Report& r);  // memcpy_section.cc
void AddDistributedView(const AnalyzeInput& in, report::Report& r);
void AddCrossRankPathSection(const AnalyzeInput& in, report::Report& r);
void AddCriticalPathView(const AnalyzeInput& in, report::Report& r);
void AddRecommendationsSection(const AnalyzeInput& in, report::Report& r);

}  // namespace trainprof::analysis
