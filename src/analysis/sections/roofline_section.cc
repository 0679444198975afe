// The per-shape roofline section (flops.h ShapeRow): per operator, input shape and dtype, its
// FLOPs and bytes, the rates it reached, and where that sits under the device's roofline.
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/sections/sections.h"

namespace trainprof::analysis {

using report::Unit;
using report::Value;

namespace {

constexpr size_t kTopShapes = 15;

std::vector<report::Column> Columns() {
  return {{"rank", "Rank", Unit::kText},
          {"operator", "Operator", Unit::kText, true, false, 40},
          {"category", "Category", Unit::kText},
          {"input_dims", "Input dims", Unit::kText, true, false, 40},
          {"dtype", "Dtype", Unit::kText},
          {"calls", "Calls", Unit::kCount},
          {"gflops", "GFLOPs", Unit::kNumber},
          {"bytes", "Bytes moved", Unit::kBytes},
          {"flops_per_byte", "FLOPs/byte", Unit::kNumber},
          {"device_s", "Device total", Unit::kSeconds},
          {"tflops_per_s", "TFLOP/s", Unit::kNumber},
          {"tb_per_s", "TB/s", Unit::kNumber},
          {"bound", "Bound", Unit::kText},
          {"roofline_pct", "Of roofline", Unit::kPercent}};
}

std::vector<Value> Row(const std::string& rank, const ShapeRow& s, const PeakTflops& peak) {
  const RooflinePoint p = Roofline(s, peak);
  const bool timed = s.device_ns > 0;
  auto rate = [&](double v) { return timed ? Value{v} : Value{}; };
  return {rank,
          s.name,
          std::string(OpCategoryName(s.category)),
          s.dims,
          s.dtype,
          s.calls,
          s.flops / 1e9,
          s.bytes > 0 ? Value{s.bytes} : Value{},
          s.bytes > 0 ? Value{s.intensity()} : Value{},
          Seconds(s.device_ns),
          rate(s.tflops_per_s()),
          s.bytes > 0 ? rate(s.tbps()) : Value{},
          p.known ? Value{std::string(p.compute_bound ? "compute" : "memory")} : Value{},
          p.known ? Value{p.pct} : Value{}};
}

std::string PeakNote(const std::string& rank, const FlopsResult& f) {
  const PeakTflops& p = f.peak;
  const double tflops = p.For(f.main_precision);
  if (tflops > 0 && p.hbm_tbps > 0)
    return fmt::format(
        "Rank {}: the roofline of {} ({}): {} peak {:.1f} TFLOP/s, {:.2f} TB/s, ridge at {:.0f} "
        "FLOPs/byte.",
        rank, p.gpu, f.device_name.empty() ? "named by option" : f.device_name,
        PrecisionName(f.main_precision), tflops, p.hbm_tbps, tflops / p.hbm_tbps);
  if (f.device_name.empty() && p.gpu.empty())
    return fmt::format(
        "Rank {}: the trace names no GPU, so no roofline: pass --peak-tflops and --peak-tbps.",
        rank);
  return fmt::format(
      "Rank {}: no {} for \"{}\" in the table, so no roofline: pass {}.", rank,
      tflops > 0 ? "memory bandwidth" : fmt::format("{} peak", PrecisionName(f.main_precision)),
      f.device_name, tflops > 0 ? "--peak-tbps" : "--peak-tflops (and --peak-tbps)");
}

constexpr const char* kNoShapeRows =
    "No GEMM, convolution, attention, elementwise, normalization or reduction call with "
    "Input Dims launched GPU work.";
constexpr const char* kHowNote =
    "FLOPs of GEMMs, convolutions and attention from their inputs; bytes: inputs and output "
    "once (flops.h). Each call counted once, at its innermost operator with a formula "
    "(aten::addmm, not aten::linear). Of roofline: the time the roofline allows, "
    "max(FLOPs / peak, bytes / bandwidth), over the time taken.";

// Each rank's roofline note (AddRankNotes: each distinct one once with many ranks).
void AddPeakNotes(report::Section& s, const AnalyzeInput& in) {
  AddRankNotes(s.notes, in, [&](size_t i) {
    const FlopsResult& f = in.analyses[i].flops;
    return f.has_shapes ? PeakNote(std::string(kRankMark), f) : std::string();
  });
}

// Many ranks: every rank's rows in roofline.csv only; report.json keeps the kTopShapes shapes
// with the most device time over all ranks, and each distinct roofline note once.
void AddManyRanks(report::Section& s, const AnalyzeInput& in) {
  AddRankTable(
      s, in, "roofline", "Roofline per operator, shape and dtype", Columns(),
      report::TableKind::kDetail,
      [](const RankAnalysis& a, const std::string& rank, std::vector<std::vector<Value>>& rows) {
        for (const ShapeRow& r : a.flops.shapes) rows.push_back(Row(rank, r, a.flops.peak));
      });
  std::vector<std::pair<const ShapeRow*, size_t>> ranked;  // row, rank index
  for (size_t i = 0; i < in.ranks.size(); ++i)
    for (const ShapeRow& r : in.analyses[i].flops.shapes) ranked.emplace_back(&r, i);
  AddPeakNotes(s, in);
  if (ranked.empty()) {
    s.tables.back().notes.push_back(kNoShapeRows);
    return;
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    return a.first->device_ns > b.first->device_ns;
  });
  report::Table& top = s.AddTable(
      "roofline_top",
      fmt::format("Roofline: the {} shapes with the most device time, over all ranks", kTopShapes),
      Columns());
  for (size_t k = 0; k < ranked.size() && k < kTopShapes; ++k)
    top.rows.push_back(Row(in.RankLabel(ranked[k].second), *ranked[k].first,
                           in.analyses[ranked[k].second].flops.peak));
  s.notes.push_back(kHowNote);
}

}  // namespace

void AddRooflineSection(const AnalyzeInput& in, report::Report& r) {
  report::Section& s = r.AddSection("roofline", "Roofline per shape");
  bool shapes = false;
  for (const RankAnalysis& a : in.analyses) shapes |= a.flops.has_shapes;
  if (!shapes) {
    s.notes.push_back(in.FromNsys() ? "No input shapes in the NVTX ranges: no FLOPs or bytes per "
                                      "shape. " +
                                          std::string(kNvtxShapesAdvice)
                                    : "No Input Dims in the trace (recorded without record_shapes, "
                                      "or by torch's legacy profiler, whose export has none): no "
                                      "FLOPs or bytes per shape. Record with "
                                      "torch.profiler.profile(record_shapes=True) on a torch "
                                      "built with Kineto.");
    return;
  }
  if (in.ManyRanks()) return AddManyRanks(s, in);
  report::Table& t = s.AddTable("roofline", "Roofline per operator, shape and dtype", Columns());
  report::Table top = t;
  top.id = "roofline_top";
  top.title = fmt::format("Roofline: the {} shapes with the most device time", kTopShapes);
  for (size_t i = 0; i < in.ranks.size(); ++i) {
    const FlopsResult& f = in.analyses[i].flops;
    for (size_t k = 0; k < f.shapes.size(); ++k) {
      t.rows.push_back(Row(in.RankLabel(i), f.shapes[k], f.peak));
      if (k < kTopShapes) top.rows.push_back(t.rows.back());
    }
  }
  AddPeakNotes(s, in);
  if (t.rows.empty()) {
    t.notes.push_back(kNoShapeRows);
    return;
  }
  MarkLong(t);
  if (t.kind == report::TableKind::kDetail) s.tables.push_back(std::move(top));
  s.notes.push_back(kHowNote);
}

}  // namespace trainprof::analysis
