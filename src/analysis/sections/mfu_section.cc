// The MFU and roofline section (flops.h): FLOPs, TFLOP/s and MFU per operator and per step.
#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "analysis/ranks/detail_store.h"
#include "analysis/sections/sections.h"

namespace trainprof::analysis {

using report::Unit;
using report::Value;

namespace {

Value Mfu(double tflops, double peak) { return peak > 0 ? Value{100 * tflops / peak} : Value{}; }

void AddMfuOperators(report::Section& s, const AnalyzeInput& in) {
  report::Table& t = AddRankTable(
      s, in, "mfu_operators", "FLOPs and MFU per operator",
      {{"rank", "Rank", Unit::kText},
       {"operator", "Operator", Unit::kText, true, false, 60},
       {"precision", "Precision", Unit::kText},
       {"calls", "Calls", Unit::kCount},
       {"gflops", "GFLOPs", Unit::kNumber},
       {"device_s", "Device total", Unit::kSeconds},
       {"tflops_per_s", "TFLOP/s", Unit::kNumber},
       {"mfu_pct", "MFU", Unit::kPercent},
       {"flops_per_byte", "FLOPs/byte", Unit::kNumber}},
      report::TableKind::kTable,
      [](const RankAnalysis& a, const std::string& rank, std::vector<std::vector<Value>>& out) {
        const FlopsResult& f = a.tables->flops;  // held
        for (const FlopsRow& o : a.lists->flops_operators) {
          const bool timed = o.device_ns > 0;  // without GPU time there is no rate
          out.push_back({rank, o.name, std::string(PrecisionName(o.precision)), o.calls,
                         o.flops / 1e9, Seconds(o.device_ns),
                         timed ? Value{o.tflops_per_s()} : Value{},
                         timed ? Mfu(o.tflops_per_s(), f.peak.For(o.precision)) : Value{},
                         o.bytes > 0 ? Value{o.intensity()} : Value{}});
        }
      });
  MarkLong(t);
  if (std::ranges::none_of(in.analyses, [](const RankAnalysis& a) { return FlopsRows(a) > 0; })) {
    t.notes.push_back(
        "No mm, addmm, bmm, linear, convolution or attention call with Input Dims that fit.");
    return;
  }
  if (in.ManyRanks()) return;  // the rows are in its CSV only
  t.charts.push_back({.kind = report::ChartKind::kBars,
                      .title = "Achieved TFLOP/s per operator",
                      .label = "operator",
                      .values = {"tflops_per_s"}});
}

void AddSteps(report::Section& s, const AnalyzeInput& in) {
  AddRankTablesTable(
      s, in, "mfu_steps", "FLOPs and MFU per step",
      {{"rank", "Rank", Unit::kText},
       {"step", "Step", Unit::kText},
       {"tflop", "TFLOP", Unit::kNumber},
       {"step_s", "Step time", Unit::kSeconds},
       {"tflops_per_s", "TFLOP/s", Unit::kNumber},
       {"mfu_pct", "MFU", Unit::kPercent}},
      [](const RankTables& t, const std::string& rank, std::vector<std::vector<Value>>& rows) {
        const FlopsResult& f = t.flops;
        for (const StepFlops& st : f.steps)
          rows.push_back({rank, st.step, st.flops / 1e12, Seconds(st.dur_ns), st.tflops_per_s(),
                          Mfu(st.tflops_per_s(), f.peak.For(f.main_precision))});
      });
}

void AddMfuPeaks(report::Section& s, const AnalyzeInput& in) {
  RankTables scratch;
  AddRankNotes(s.notes, in, [&](size_t i) {
    const FlopsResult& f = in.TablesAt(i, scratch).flops;
    const double peak = f.peak.For(f.main_precision);
    return peak > 0 ? fmt::format("Rank {}: MFU against {} {} peak {:.1f} TFLOP/s ({}).", kRankMark,
                                  f.peak.gpu, PrecisionName(f.main_precision), peak,
                                  f.device_name.empty() ? "no device name" : f.device_name)
                    : fmt::format(
                          "Rank {}: no peak for \"{}\" in the table: pass --peak-tflops "
                          "for MFU.",
                          kRankMark, f.device_name);
  });
}

// What share of the GPU time the FLOPs cover, and what the rest is: an MFU of the covered part
// read as the whole would overstate the rest's efficiency or hide it.
void AddCoverage(report::Section& s, const AnalyzeInput& in) {
  int64_t covered = 0;
  ForEachRankTables(in, [&](size_t, const RankTables& t) { covered += t.flops.covered_ns; });
  AddCoverageMetric(s, in, "flops_coverage_pct", "GPU time with a FLOP formula", covered);
  RankTables scratch;
  AddRankNotes(s.notes, in, [&](size_t i) {
    const RankAnalysis& a = in.analyses[i];
    if (a.gpu_ns <= 0) return std::string();
    const FlopsResult& flops = in.TablesAt(i, scratch).flops;
    const auto pct = [&](int64_t ns) {
      return 100.0 * static_cast<double>(ns) / static_cast<double>(a.gpu_ns);
    };
    std::string rest;
    for (const auto& [name, ns] : flops.uncovered)
      rest += fmt::format("{}{} {:.1f} %", rest.empty() ? "" : ", ", name, pct(ns));
    return fmt::format("Rank {}: FLOPs and MFU cover {:.1f} % of the GPU time{}.", kRankMark,
                       pct(flops.covered_ns),
                       rest.empty() ? "" : "; the most of the rest is " + rest);
  });
}

}  // namespace

void AddMfuSection(const AnalyzeInput& in, report::Report& r) {
  report::Section& s = r.AddSection("mfu", "MFU and roofline");
  if (!AnyRankTables(in, [](const RankTables& t) { return t.flops.has_shapes; })) {
    s.notes.push_back(NoShapesNote(in, "no FLOPs, TFLOP/s or MFU"));
    return;
  }
  AddMfuOperators(s, in);
  AddSteps(s, in);
  AddMfuPeaks(s, in);
  AddCoverage(s, in);
  s.notes.push_back(
      "FLOPs of mm, addmm, bmm, baddbmm, linear, frameworks' *gemm* operators, convolution and "
      "scaled_dot_product_attention from Input Dims (docs/trace-analysis.md); a step counts each "
      "call once, at its outermost counted operator. A convolution's geometry comes from its "
      "Concrete Inputs; without them, stride 1 and same padding.");
}

}  // namespace trainprof::analysis
