// The per-shape roofline section (flops.h ShapeRow): per operator, input shape and dtype, its
// FLOPs and bytes, the rates it reached, and where that sits under the device's roofline.
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/ranks/detail_store.h"
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

// A row's share of the roofline above 100 %: more than the hardware allows, so the figure is
// wrong somewhere. Its likely cause, most likely first: calls too short for the trace's
// microsecond timestamps, inputs small enough for the L2 cache to serve (the bytes assume each
// input comes from HBM once), or a peak that is too low for this GPU.
std::string AboveRooflineCause(const ShapeRow& s, bool compute_bound) {
  const double per_call_ns = static_cast<double>(s.device_ns) / std::max<int64_t>(1, s.calls);
  const double bytes_per_call = s.bytes / std::max<int64_t>(1, s.calls);
  if (per_call_ns < 10'000)
    return fmt::format("timer resolution ({:.1f} µs a call, timed in whole µs or less)",
                       per_call_ns / 1e3);
  if (!compute_bound && bytes_per_call <= 64.0 * (1 << 20))
    return fmt::format(
        "caching ({:.1f} MiB a call fit in the L2 cache, which serves them faster than HBM; "
        "the bytes count each input read from HBM once)",
        bytes_per_call / (1 << 20));
  return compute_bound ? "a peak FLOP/s too low for this GPU (pass --peak-tflops)"
                       : "a memory bandwidth too low for this GPU (pass --peak-tbps)";
}

// Rows above 100 % of their roofline, flagged with their likely cause, as a section note.
class AboveRoofline {
 public:
  void Add(const std::string& rank, const ShapeRow& s, const RooflinePoint& p) {
    if (++count_ <= kNamed)
      named_.push_back(fmt::format("{} {} (rank {}): {:.1f}%, likely {}", s.name, s.dims, rank,
                                   p.pct, AboveRooflineCause(s, p.compute_bound)));
  }
  void AddNote(report::Section& s) const {
    if (count_ == 0) return;
    std::string text = fmt::format(
        "{} row{} would sit above 100% of the roofline, which no hardware reaches, so their "
        "\"Of roofline\" is left empty: ",
        count_, count_ == 1 ? "" : "s");
    for (size_t i = 0; i < named_.size(); ++i) text += (i ? "; " : "") + named_[i];
    if (count_ > named_.size()) text += fmt::format("; and {} more", count_ - named_.size());
    s.notes.push_back(text + ".");
  }

 private:
  static constexpr size_t kNamed = 5;
  size_t count_ = 0;
  std::vector<std::string> named_;
};

std::vector<Value> Row(const std::string& rank, const ShapeRow& s, const PeakTflops& peak,
                       AboveRoofline* above = nullptr) {
  const RooflinePoint p = Roofline(s, peak);
  const bool above_roof = p.known && p.pct > 100;
  if (above_roof && above) above->Add(rank, s, p);
  const bool timed = s.device_ns > 0;
  auto rate = [&](double v) { return timed ? Value{v} : Value{}; };
  return report::MakeRow(
      rank, s.name, std::string(OpCategoryName(s.category)), s.dims, s.dtype, s.calls,
      s.flops / 1e9, s.bytes > 0 ? Value{s.bytes} : Value{},
      s.bytes > 0 ? Value{s.intensity()} : Value{}, Seconds(s.device_ns), rate(s.tflops_per_s()),
      s.bytes > 0 ? rate(s.tbps()) : Value{},
      p.known ? Value{std::string(p.compute_bound ? "compute" : "memory")} : Value{},
      p.known && !above_roof ? Value{p.pct} : Value{});
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
  RankTables scratch;
  AddRankNotes(s.notes, in, [&](size_t i) {
    const FlopsResult& f = in.TablesAt(i, scratch).flops;
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
        const PeakTflops& peak = a.tables->flops.peak;  // held
        for (const ShapeRow& r : a.lists->flops_shapes) rows.push_back(Row(rank, r, peak));
      });
  AboveRoofline above;
  TopRows<ShapeRow> ranked(
      kTopShapes, [](const ShapeRow& a, const ShapeRow& b) { return a.device_ns > b.device_ns; });
  std::vector<ShapeRow> scratch;
  for (size_t i = 0; i < in.ranks.size(); ++i) ranked.Add(ShapesOf(in.analyses[i], scratch), i);
  AddPeakNotes(s, in);
  if (!ranked.any()) {
    s.tables.back().notes.push_back(kNoShapeRows);
    return;
  }
  report::Table& top = s.AddTable(
      "roofline_top",
      fmt::format("Roofline: the {} shapes with the most device time, over all ranks", kTopShapes),
      Columns());
  RankTables tables;
  for (const auto& [row, rank] : ranked.rows())
    top.rows.push_back(Row(in.RankLabel(rank), row, in.TablesAt(rank, tables).flops.peak, &above));
  above.AddNote(s);
  s.notes.push_back(kHowNote);
}

}  // namespace

void AddRooflineSection(const AnalyzeInput& in, report::Report& r) {
  report::Section& s = r.AddSection("roofline", "Roofline per shape");
  if (!AnyRankTables(in, [](const RankTables& t) { return t.flops.has_shapes; })) {
    s.notes.push_back(NoShapesNote(in, "no FLOPs or bytes per shape"));
    return;
  }
  if (in.ManyRanks()) return AddManyRanks(s, in);
  report::Table& t = s.AddTable("roofline", "Roofline per operator, shape and dtype", Columns());
  report::Table top = t;
  top.id = "roofline_top";
  top.title = fmt::format("Roofline: the {} shapes with the most device time", kTopShapes);
  AboveRoofline above;
  std::vector<ShapeRow> scratch;
  RankTables tables;
  for (size_t i = 0; i < in.ranks.size(); ++i) {
    const FlopsResult& f = in.TablesAt(i, tables).flops;
    const std::vector<ShapeRow>& shapes = ShapesOf(in.analyses[i], scratch);
    for (size_t k = 0; k < shapes.size(); ++k) {
      t.rows.push_back(Row(in.RankLabel(i), shapes[k], f.peak, &above));
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
  above.AddNote(s);
  s.notes.push_back(kHowNote);
}

}  // namespace trainprof::analysis
