// The Operator view and Kernel view sections (operator_view.h): a top table for the terminal
// and its chart, and the full table for CSV and report.json.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "analysis/ranks/detail_store.h"
#include "analysis/sections/sections.h"

namespace trainprof::analysis {

using report::Unit;
using report::Value;

namespace {

constexpr size_t kTopRows = 15;  // rows of a view's top table
// Rows of the by-shape table per rank: a real model has thousands of (operator, shape) pairs,
// which would be most of report.json and report.html.
constexpr size_t kMaxShapeRows = 100;

Value OrEmpty(double v) { return std::isfinite(v) ? Value(v) : Value(std::monostate{}); }

std::vector<report::Column> OperatorColumns() {
  return {{"rank", "Rank", Unit::kText},
          {"name", "Operator", Unit::kText, true, false, 90},
          {"calls", "Calls", Unit::kCount},
          {"device_self_s", "Device self", Unit::kSeconds},
          {"device_total_s", "Device total", Unit::kSeconds},
          {"host_self_s", "Host self", Unit::kSeconds},
          {"host_total_s", "Host total", Unit::kSeconds},
          {"tc_eligible", "TC eligible", Unit::kBool},
          {"tc_self_pct", "TC self", Unit::kPercent},
          {"tc_total_pct", "TC total", Unit::kPercent}};
}

// An operator's cells; `text` (a grouped view's shape or call stack) right after its name.
std::vector<Value> OperatorCells(const std::string& rank, const OperatorRow& o,
                                 const std::string* text = nullptr) {
  std::vector<Value> v;
  v.reserve(11);
  report::AppendCells(v, rank, o.name);
  if (text != nullptr) v.emplace_back(*text);
  report::AppendCells(v, o.calls, Seconds(o.device_self_ns), Seconds(o.device_total_ns),
                      Seconds(o.host_self_ns), Seconds(o.host_total_ns), o.tc_eligible,
                      o.tc_self_pct(), o.tc_total_pct());
  return v;
}

std::vector<report::Column> KernelColumns(bool per_operator) {
  std::vector<report::Column> c = {{"rank", "Rank", Unit::kText}};
  if (per_operator) c.push_back({"operator", "Operator", Unit::kText, true, false, 60});
  for (report::Column col : std::vector<report::Column>{
           {"name", "Kernel", Unit::kText, true, false, 90},
           {"tensor_cores", "Tensor Cores", Unit::kBool},
           {"calls", "Calls", Unit::kCount},
           {"total_s", "Total", Unit::kSeconds},
           {"mean_s", "Mean", Unit::kSeconds},
           {"max_s", "Max", Unit::kSeconds},
           {"min_s", "Min", Unit::kSeconds},
           {"blocks_per_sm", "Mean blocks/SM", Unit::kNumber},
           {"occupancy_pct", "Mean est. achieved occupancy", Unit::kPercent}})
    c.push_back(std::move(col));
  return c;
}

std::vector<Value> KernelCells(const std::string& rank, const KernelRow& k, bool per_operator) {
  std::vector<Value> v;
  v.reserve(11);
  v.emplace_back(rank);
  if (per_operator) v.emplace_back(k.op.empty() ? std::string("(no operator)") : k.op);
  report::AppendCells(v, k.name, k.tensor_cores, k.calls, Seconds(k.total_ns), Seconds(k.mean_ns()),
                      Seconds(k.max_ns), Seconds(k.min_ns), OrEmpty(k.blocks_per_sm),
                      OrEmpty(k.occupancy_pct));
  return v;
}

// A grouping of the Operator view: which rows, and the column its text goes in.
struct Grouping {
  const char* id;
  const char* title;
  report::Column column;
  const char* what;  // "shape", "call stack"
  std::vector<OperatorRow> RankLists::*rows;
  std::string OperatorRow::*text;
  int64_t (*count)(const RankAnalysis&);  // the rows' count, spilled or not (detail_store.h)
};

// Per operator and shape or stack, the kMaxShapeRows of each rank with the most device time.
report::Table& AddGrouped(report::Section& s, const AnalyzeInput& in, const Grouping& g) {
  std::vector<report::Column> cols = OperatorColumns();
  cols.insert(cols.begin() + 2, g.column);
  report::Table& t =
      AddRankTable(s, in, g.id, g.title, cols, report::TableKind::kDetail,
                   [rows_of = g.rows, text = g.text](const RankAnalysis& a, const std::string& rank,
                                                     std::vector<std::vector<Value>>& out) {
                     const std::vector<OperatorRow>& rows = (*a.lists).*rows_of;
                     for (size_t k = 0; k < rows.size() && k < kMaxShapeRows; ++k) {
                       out.push_back(OperatorCells(rank, rows[k], &(rows[k].*text)));
                     }
                   });
  size_t left_out = 0;
  for (const RankAnalysis& a : in.analyses) {
    const auto rows = static_cast<size_t>(g.count(a));
    left_out += rows - std::min(rows, kMaxShapeRows);
  }
  if (left_out > 0)
    t.notes.push_back(fmt::format(
        "The {} (operator, {}) pairs of each rank with the most device time, then host time; "
        "{} more with less are left out.",
        kMaxShapeRows, g.what, left_out));
  return t;
}

// By input shape where the trace has shapes (record_shapes), by call stack where it has stacks.
void AddByShapeAndStack(report::Section& s, const AnalyzeInput& in) {
  AddGrouped(s, in,
             {"operator_view_by_shape",
              "Operators by input shape",
              {"input_dims", "Input dims", Unit::kText, true, false, 120},
              "shape",
              &RankLists::operators_by_shape,
              &OperatorRow::input_dims,
              &ShapeRows});
  const bool shapes =
      std::ranges::any_of(in.analyses, [](const RankAnalysis& a) { return ShapeRows(a) > 0; });
  if (!shapes) s.notes.push_back(NoShapesNote(in, "no grouping by input shape"));
  const bool stacks =
      std::ranges::any_of(in.analyses, [](const RankAnalysis& a) { return StackRows(a) > 0; });
  if (stacks)
    AddGrouped(s, in,
               {"operator_view_by_stack",
                "Operators by call stack",
                {"call_stack", "Call stack", Unit::kText, true, false, 120},
                "call stack",
                &RankLists::operators_by_stack,
                &OperatorRow::call_stack,
                &StackRows});
}

// What the operator view reads of every rank's operators, in one pass (each rank's list read
// back once when it is spilled): the top rows, the figures across ranks (many ranks only) and
// the device self time of all ranks.
struct OperatorsAcrossRanks {
  TopRows<OperatorRow> top{kTopRows, [](const OperatorRow& a, const OperatorRow& b) {
                             return a.device_self_ns != b.device_self_ns
                                        ? a.device_self_ns > b.device_self_ns
                                        : a.host_self_ns > b.host_self_ns;
                           }};
  AcrossRanks across;
  int64_t device_self_ns = 0;
};

OperatorsAcrossRanks ReadOperators(const AnalyzeInput& in) {
  OperatorsAcrossRanks out;
  std::vector<OperatorRow> scratch;
  for (size_t i = 0; i < in.analyses.size(); ++i) {
    const std::vector<OperatorRow>& ops = OperatorsOf(in.analyses[i], scratch);
    out.top.Add(ops, i);
    for (const OperatorRow& o : ops) {
      out.device_self_ns += o.device_self_ns;
      if (in.ManyRanks()) out.across.Add(o.name, i, static_cast<double>(o.device_self_ns));
    }
  }
  return out;
}

// Many ranks: per operator, its device self time over the ranks, the most first.
void AddAcrossRanks(report::Section& s, const AnalyzeInput& in, const AcrossRanks& across) {
  std::vector<AcrossRanks::Row> rows = across.Rows();
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& a, const auto& b) { return a.mean > b.mean; });
  std::vector<report::Column> cols = {{"name", "Operator", Unit::kText, true, false, 90}};
  for (report::Column& c : AcrossRanks::Columns("device self")) cols.push_back(std::move(c));
  report::Table& t =
      s.AddTable("operator_view_across_ranks", "Device self time per operator across ranks", cols);
  for (const AcrossRanks::Row& row : rows) {
    std::vector<Value> v = {row.key};
    for (Value& c : AcrossRanks::Cells(row, in)) v.push_back(std::move(c));
    t.rows.push_back(std::move(v));
  }
  MarkLong(t);
}

}  // namespace

void AddOperatorSection(const AnalyzeInput& in, report::Report& r) {
  report::Section& s = r.AddSection("operator_view", "Operator view");
  report::Table& top = s.AddTable("operator_view_top",
                                  fmt::format("Top {} operators by {} self time", kTopRows,
                                              in.AnyGpuWork() ? "device" : "host"),
                                  OperatorColumns());
  top.charts.push_back({.kind = report::ChartKind::kBars,
                        .title = "Device self time by operator",
                        .label = "name",
                        .values = {"device_self_s"},
                        .limit = kTopRows});
  AddRankTable(
      s, in, "operator_view", "Operators", OperatorColumns(), report::TableKind::kDetail,
      [](const RankAnalysis& a, const std::string& rank, std::vector<std::vector<Value>>& out) {
        for (const OperatorRow& o : a.lists->operators) out.push_back(OperatorCells(rank, o));
      });
  const OperatorsAcrossRanks ops = ReadOperators(in);
  for (const auto& [row, rank] : ops.top.rows())
    top.rows.push_back(OperatorCells(in.RankLabel(rank), row));
  if (in.ManyRanks()) AddAcrossRanks(s, in, ops.across);
  if (!ops.top.any()) s.notes.push_back("No cpu_op events in the trace: no operator to show.");
  AddCoverageMetric(s, in, "device_coverage_pct", "GPU time under an operator (device self)",
                    ops.device_self_ns);
  AddByShapeAndStack(s, in);
  s.notes.push_back(
      "Device self: GPU time launched by the operator's own runtime calls; device total adds its "
      "child operators' (the TensorBoard plugin's definitions). TC: share of that time in "
      "kernels on Tensor Cores.");
}

void AddKernelSection(const AnalyzeInput& in, report::Report& r) {
  report::Section& s = r.AddSection("kernel_view", "Kernel view");
  report::Table& top =
      s.AddTable("kernel_view_top", fmt::format("Top {} kernels by total time", kTopRows),
                 KernelColumns(false));
  top.charts.push_back({.kind = report::ChartKind::kBars,
                        .title = "Total time by kernel",
                        .label = "name",
                        .values = {"total_s"},
                        .limit = kTopRows});
  report::Table& k = AddRankTable(
      s, in, "kernel_view", "Kernels", KernelColumns(false), report::TableKind::kDetail,
      [](const RankAnalysis& a, const std::string& rank, std::vector<std::vector<Value>>& out) {
        for (const KernelRow& row : a.lists->kernels) out.push_back(KernelCells(rank, row, false));
      });
  report::Table& ok = AddRankTable(
      s, in, "operator_kernel_view", "Kernels per operator", KernelColumns(true),
      report::TableKind::kTable,
      [](const RankAnalysis& a, const std::string& rank, std::vector<std::vector<Value>>& out) {
        for (const KernelRow& row : a.lists->operator_kernels)
          out.push_back(KernelCells(rank, row, true));
      });
  double tc_ns = 0, all_ns = 0;
  TopRows<KernelRow> ranked(kTopRows, [](const KernelRow& a, const KernelRow& b) {
    return Seconds(a.total_ns) > Seconds(b.total_ns);
  });
  std::vector<KernelRow> scratch;
  for (size_t i = 0; i < in.ranks.size(); ++i) {
    const std::vector<KernelRow>& kernels = KernelsOf(in.analyses[i], scratch);
    ranked.Add(kernels, i);
    for (const KernelRow& row : kernels) {
      all_ns += static_cast<double>(row.total_ns);
      if (row.tensor_cores) tc_ns += static_cast<double>(row.total_ns);
    }
  }
  for (const auto& [row, rank] : ranked.rows())
    top.rows.push_back(KernelCells(in.RankLabel(rank), row, false));
  if (!in.ManyRanks()) MarkLong(ok);
  if (all_ns > 0)
    s.AddMetric("tensor_core_kernel_pct", "Kernel time on Tensor Cores", 100 * tc_ns / all_ns,
                Unit::kPercent);
  if (!ranked.any()) s.notes.push_back("No kernels in the trace.");
  k.notes.push_back(
      "Mean blocks/SM and est. achieved occupancy are weighted by duration; an instance without "
      "the figure counts as 0 (the plugin's rule); empty when no instance has it.");
}

}  // namespace trainprof::analysis
