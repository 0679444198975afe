// The parts of `trainprof diff` that compare what ran on the GPU whatever the GPU: operators by
// GPU time and TFLOP/s, operator categories, and kernel families (KernelFamily,
// kernel_class.h), so that the same model on an H100 and an MI300X says which operators moved,
// where kernel names have nothing in common.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "analysis/diff.h"
#include "analysis/kernel_class.h"
#include "analysis/ranks/detail_store.h"

namespace trainprof::analysis {

using report::Unit;
using report::Value;

namespace {

double StepsOf(const RankAnalysis& a) {
  return std::max<double>(1, static_cast<double>(a.steps.steps.size()));
}

struct DevicePerStep {
  double ns = 0, flops = 0;
};

// Per name, what `add` reports of each rank (`add(a, emit)`, emit(name, ns, flops)), per
// analysed step and averaged over the ranks.
template <class Add>
std::map<std::string, DevicePerStep> PerStepOverRanks(const DiffSide& s, Add add) {
  std::map<std::string, DevicePerStep> out;
  const double ranks = std::max<double>(1, static_cast<double>(s.analyses->size()));
  for (const RankAnalysis& a : *s.analyses) {
    DetailHold hold(a);  // a side of many ranks keeps its lists in a scratch file
    const double n = StepsOf(a) * ranks;
    add(a, [&](const std::string& name, double ns, double flops) {
      DevicePerStep& p = out[name];
      p.ns += ns / n, p.flops += flops / n;
    });
  }
  return out;
}

// Per operator name: its direct GPU time (device self), and the FLOPs of its GEMM, convolution
// and attention shapes (the other kinds' FLOPs are nominal).
std::map<std::string, DevicePerStep> OperatorGpu(const DiffSide& s) {
  return PerStepOverRanks(s, [](const RankAnalysis& a, auto emit) {
    for (const OperatorRow& o : a.lists->operators)
      if (o.device_self_ns > 0) emit(o.name, static_cast<double>(o.device_self_ns), 0);
    for (const ShapeRow& r : a.lists->flops_shapes)
      if (r.category == OpCategory::kGemm || r.category == OpCategory::kConvolution ||
          r.category == OpCategory::kAttention)
        emit(r.name, 0, r.flops);
  });
}

std::map<std::string, DevicePerStep> CategoryGpu(const DiffSide& s) {
  return PerStepOverRanks(s, [](const RankAnalysis& a, auto emit) {
    for (size_t c = 0; c < kNumOpCategories; ++c)
      if (a.tables->categories.by[c].ns > 0)  // held
        emit(OpCategoryName(static_cast<OpCategory>(c)),
             static_cast<double>(a.tables->categories.by[c].ns), 0);
  });
}

std::map<std::string, DevicePerStep> FamilyGpu(const DiffSide& s) {
  return PerStepOverRanks(s, [](const RankAnalysis& a, auto emit) {
    for (const KernelRow& k : a.lists->kernels)
      emit(KernelFamily(k.name), static_cast<double>(k.total_ns), 0);
  });
}

Value Rate(const DevicePerStep& p) {
  return p.ns > 0 && p.flops > 0 ? Value{p.flops / p.ns / 1e3} : Value{};
}

// One table of A against B per name, the largest changes first.
void AddTable(report::Section& s, const std::string& id, const std::string& title,
              const std::string& what, const std::map<std::string, DevicePerStep>& a,
              const std::map<std::string, DevicePerStep>& b, size_t top_n, bool rates) {
  struct Row {
    std::string name;
    DevicePerStep a, b;
  };
  std::map<std::string, Row> by_name;
  for (const auto& [n, v] : a) by_name[n].a = v;
  for (const auto& [n, v] : b) by_name[n].b = v;
  std::vector<Row> rows;  // by name, then by the size of the change
  for (auto& [n, r] : by_name) r.name = n, rows.push_back(std::move(r));
  std::ranges::stable_sort(rows, [](const Row& x, const Row& y) {
    return std::fabs(x.b.ns - x.a.ns) > std::fabs(y.b.ns - y.a.ns);
  });
  std::vector<report::Column> cols = {{"name", what, Unit::kText, true, false, 60},
                                      {"a_s", "GPU time A", Unit::kSeconds},
                                      {"b_s", "GPU time B", Unit::kSeconds},
                                      {"delta_s", "Delta", Unit::kSeconds},
                                      {"ratio", "B / A", Unit::kNumber}};
  if (rates) {
    cols.push_back({"tflops_a", "TFLOP/s A", Unit::kNumber});
    cols.push_back({"tflops_b", "TFLOP/s B", Unit::kNumber});
  }
  report::Table& t = s.AddTable(id, title, cols);
  for (size_t i = 0; i < rows.size() && i < top_n; ++i) {
    const DevicePerStep &pa = rows[i].a, &pb = rows[i].b;
    std::vector<Value> row = {rows[i].name, pa.ns / 1e9, pb.ns / 1e9, (pb.ns - pa.ns) / 1e9,
                              pa.ns > 0 ? Value{pb.ns / pa.ns} : Value{}};
    if (rates) row.push_back(Rate(pa)), row.push_back(Rate(pb));
    t.rows.push_back(std::move(row));
  }
  t.charts.push_back({.kind = report::ChartKind::kBars,
                      .title = title + ": change per step (B - A)",
                      .label = "name",
                      .values = {"delta_s"}});
}

}  // namespace

std::string DeviceOf(const DiffSide& s) {
  RankTables scratch;
  for (size_t i = 0; i < s.models->size() && i < s.analyses->size(); ++i)
    for (const GpuSummary& g : TablesOf((*s.analyses)[i], scratch).gpus) {
      const trace::DeviceInfo* d = (*s.models)[i].FindDevice(g.device);
      if (d && !d->name.empty())
        return d->arch.empty() ? d->name : fmt::format("{} ({})", d->name, d->arch);
    }
  return "";
}

void AddGpuWorkDiff(report::Section& s, const DiffSide& a, const DiffSide& b, int top_n,
                    bool other_device) {
  const size_t n = static_cast<size_t>(std::max(top_n, 1));
  AddTable(s, "operator_gpu_diff", "Operators by GPU time (per step)", "Operator", OperatorGpu(a),
           OperatorGpu(b), n, true);
  AddTable(s, "category_diff", "Operator categories by GPU time (per step)", "Category",
           CategoryGpu(a), CategoryGpu(b), kNumOpCategories, false);
  if (other_device)
    AddTable(s, "kernel_family_diff", "Kernel families by GPU time (per step)", "Kernel family",
             FamilyGpu(a), FamilyGpu(b), n, false);
}

}  // namespace trainprof::analysis
