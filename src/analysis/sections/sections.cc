// The helpers every section shares (sections.h): rank notes and labels' tables, coverage
// metrics, AcrossRanks, AnalyzeInput's questions and the notes of views without shapes.
#include "analysis/sections/sections.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>

#include "analysis/ranks/detail_store.h"
#include "report/packed_rows.h"

namespace trainprof::analysis {

namespace {

// A csv_only table's rows, made a rank at a time from the analyses when the CSV is written.
class RankRows : public report::RowSource {
 public:
  RankRows(const std::vector<RankAnalysis>& analyses,
           std::shared_ptr<const std::vector<std::string>> labels, RankRowsFn rows_of,
           RankDetail detail)
      : analyses_(analyses),
        labels_(std::move(labels)),
        rows_of_(std::move(rows_of)),
        detail_(detail != RankDetail::kNotRead) {}
  size_t parts() const override { return analyses_.size(); }
  void AppendRows(size_t part, std::vector<std::vector<report::Value>>& rows) const override {
    rows_of_(analyses_[part], (*labels_)[part], rows);
  }
  void BeginPart(size_t part) const override {
    if (detail_) HoldDetail(analyses_[part]);
  }
  void EndPart(size_t part) const override {
    if (detail_) LetDetailGo(analyses_[part]);
  }
  void PartWritten(size_t part) const override {
    if (detail_) RetireDetail(analyses_[part]);
  }
  // The tables that read the detail (or the tables) are written together, each rank's read back
  // once for all of them; the others on their own.
  const void* batch() const override { return detail_ ? &analyses_ : nullptr; }

 private:
  const std::vector<RankAnalysis>& analyses_;
  std::shared_ptr<const std::vector<std::string>> labels_;
  RankRowsFn rows_of_;
  bool detail_;
};

}  // namespace

void AddRankNotes(std::vector<std::string>& notes, const AnalyzeInput& in,
                  const std::function<std::string(size_t)>& note, std::string_view figures_in) {
  std::vector<std::pair<std::string, std::vector<size_t>>> distinct;  // note, its ranks
  std::unordered_map<std::string, size_t> at;                         // note -> in distinct
  for (size_t i = 0; i < in.ranks.size(); ++i) {
    std::string n = note(i);
    if (n.empty()) continue;
    if (!in.ManyRanks()) {
      distinct.push_back({std::move(n), {i}});
      continue;
    }
    auto [it, fresh] = at.try_emplace(n, distinct.size());
    if (fresh) distinct.push_back({std::move(n), {}});
    distinct[it->second].second.push_back(i);
  }
  auto who = [&](size_t first, size_t others) {
    return others == 0 ? in.RankLabel(first)
                       : fmt::format("{} and {} other ranks", in.RankLabel(first), others);
  };
  size_t first_past = 0, past = 0;  // the ranks of the notes past kMostRankNotes
  for (size_t k = 0; k < distinct.size(); ++k) {
    auto& [text, ranks] = distinct[k];
    if (in.ManyRanks() && k >= kMostRankNotes) {
      if (past == 0) first_past = ranks[0];
      past += ranks.size();
      continue;
    }
    const std::string name = who(ranks[0], ranks.size() - 1);
    for (size_t m = text.find(kRankMark); m != std::string::npos;
         m = text.find(kRankMark, m + name.size()))
      text.replace(m, kRankMark.size(), name);
    notes.push_back(std::move(text));
  }
  if (past > 0)
    notes.push_back(fmt::format("Rank {}: the same notes as above, with figures of {} own{}.",
                                who(first_past, past - 1), past == 1 ? "its" : "their",
                                figures_in.empty() ? "" : fmt::format(" ({})", figures_in)));
}

void AddCoverageMetric(report::Section& s, const AnalyzeInput& in, const std::string& key,
                       const std::string& title,
                       const std::function<int64_t(const RankAnalysis&)>& covered) {
  int64_t in_view = 0;
  for (const RankAnalysis& a : in.analyses) in_view += covered(a);
  AddCoverageMetric(s, in, key, title, in_view);
}

void AddCoverageMetric(report::Section& s, const AnalyzeInput& in, const std::string& key,
                       const std::string& title, int64_t covered_ns) {
  int64_t gpu = 0;
  for (const RankAnalysis& a : in.analyses) gpu += a.gpu_ns;
  if (gpu <= 0) return;
  s.AddMetric(key, title, 100.0 * static_cast<double>(covered_ns) / static_cast<double>(gpu),
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

const RankTables& AnalyzeInput::TablesAt(size_t i, RankTables& scratch) const {
  return tables != nullptr ? (*tables)[i] : TablesOf(analyses[i], scratch);
}

std::shared_ptr<const std::vector<RankTables>> ReadTablesOnce(
    const std::vector<RankAnalysis>& analyses) {
  if (analyses.size() > kMaxJsonRowsManyRanks ||
      std::ranges::all_of(analyses, [](const RankAnalysis& a) { return bool(a.tables); }))
    return nullptr;
  auto out = std::make_shared<std::vector<RankTables>>(analyses.size());
  for (size_t i = 0; i < analyses.size(); ++i) {
    RankTables& t = (*out)[i];
    const RankTables& read = TablesOf(analyses[i], t);
    if (&read != &t) t = read;  // the rank's own
  }
  return out;
}

namespace {

// Table `added` of `rows_of` each rank: in its CSV only past `inline_ranks` ranks, and then made
// a rank at a time as its CSV is written when the input streams its rank tables.
report::Table& FillWithRanks(report::Table& added, const AnalyzeInput& in, size_t inline_ranks,
                             RankRowsFn rows_of, RankDetail detail) {
  if (in.ranks.size() > inline_ranks) {
    added.KeepInCsvOnly();
    if (in.stream_rank_tables) {
      added.source = std::make_shared<RankRows>(in.analyses, in.labels, std::move(rows_of), detail);
      return added;
    }
  }
  for (size_t i = 0; i < in.analyses.size(); ++i) {
    std::optional<DetailHold> hold;
    if (detail == RankDetail::kRead) hold.emplace(in.analyses[i]);
    rows_of(in.analyses[i], in.RankLabel(i), added.rows);
  }
  return added;
}

}  // namespace

report::Table& AddRankTable(report::Section& s, const AnalyzeInput& in, std::string id,
                            std::string title, std::vector<report::Column> cols,
                            report::TableKind kind, RankRowsFn rows_of, RankDetail detail) {
  return FillWithRanks(s.AddTable(std::move(id), std::move(title), std::move(cols), kind), in,
                       kInlineRanks, std::move(rows_of), detail);
}

report::Table& AddRankSummaryTable(report::Section& s, const AnalyzeInput& in, std::string id,
                                   std::string title, std::vector<report::Column> cols,
                                   RankRowsFn rows_of, report::TableKind kind, RankDetail detail) {
  return FillWithRanks(s.AddTable(std::move(id), std::move(title), std::move(cols), kind), in,
                       kMaxJsonRowsManyRanks, std::move(rows_of), detail);
}

report::Table& AddRankTablesTable(report::Section& s, const AnalyzeInput& in, std::string id,
                                  std::string title, std::vector<report::Column> cols,
                                  RankTablesRowsFn rows_of, report::TableKind kind) {
  // Up to a thousand ranks the rows are made now, from the tables read once (`in.tables`);
  // past that, as the CSV is written, from the tables the batch holds.
  auto of_tables = [rows_of = std::move(rows_of), tables = in.tables, first = in.analyses.data()](
                       const RankAnalysis& a, const std::string& rank,
                       std::vector<std::vector<report::Value>>& rows) {
    RankTables scratch;
    rows_of(tables != nullptr ? (*tables)[&a - first] : TablesOf(a, scratch), rank, rows);
  };
  return AddRankSummaryTable(s, in, std::move(id), std::move(title), std::move(cols),
                             std::move(of_tables), kind, RankDetail::kTables);
}

void ForEachRankTables(const AnalyzeInput& in,
                       const std::function<void(size_t, const RankTables&)>& f) {
  RankTables scratch;
  for (size_t i = 0; i < in.analyses.size(); ++i) f(i, in.TablesAt(i, scratch));
}

bool AnyRankTables(const AnalyzeInput& in, const std::function<bool(const RankTables&)>& pred) {
  RankTables scratch;
  for (size_t i = 0; i < in.analyses.size(); ++i)
    if (pred(in.TablesAt(i, scratch))) return true;
  return false;
}

}  // namespace trainprof::analysis
