#include "analysis/diff.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace trainprof::analysis {

using report::Unit;
using report::Value;

namespace {

struct Totals {
  double count = 0;  // per step
  double ns = 0;     // per step
};

// Per-step totals by name of CPU operators (ops) or GPU kernels (kernels), over the analysed
// steps of every rank, averaged over ranks.
std::map<std::string, Totals> PerStep(const DiffSide& s, bool kernels) {
  std::map<std::string, Totals> out;
  const auto& models = *s.models;
  const auto& an = *s.analyses;
  double ranks = 0;
  for (size_t r = 0; r < models.size(); ++r) {
    const trace::TraceModel& m = models[r];
    const StepsResult& st = an[r].steps;
    if (st.steps.empty()) continue;
    ranks += 1;
    int64_t lo = st.steps.front().begin_ns, hi = st.steps.back().end_ns;
    double n = static_cast<double>(st.steps.size());
    for (size_t i = 0; i < m.size(); ++i) {
      bool want = kernels ? trace::IsGpuKind(m.kind[i]) : m.kind[i] == trace::EventKind::kCpuOp;
      if (!want || m.ts_ns[i] < lo || m.ts_ns[i] >= hi) continue;
      Totals& t = out[m.name_of(i)];
      t.count += 1 / n;
      t.ns += static_cast<double>(m.dur_ns[i]) / n;
    }
  }
  if (ranks > 1)
    for (auto& [name, t] : out) t.count /= ranks, t.ns /= ranks;
  return out;
}

// The share of `x`'s operator calls (per step) whose name `y` also runs.
double SharedCalls(const std::map<std::string, Totals>& x, const std::map<std::string, Totals>& y) {
  double all = 0, shared = 0;
  for (const auto& [name, t] : x) {
    all += t.count;
    if (y.contains(name)) shared += t.count;
  }
  return all > 0 ? shared / all : 1;
}

// Below this share of calls in operators both sides run, A and B are not one model.
constexpr double kSameModelShare = 0.5;

void AddChangeTables(report::Section& sec, const std::string& what, const std::string& id,
                     const std::map<std::string, Totals>& a, const std::map<std::string, Totals>& b,
                     int top_n) {
  struct Row {
    std::string name;
    Totals a, b;
    double delta() const { return b.ns - a.ns; }
  };
  std::vector<Row> added, removed, changed;
  for (const auto& [name, ta] : a) {
    auto it = b.find(name);
    if (it == b.end())
      removed.push_back({name, ta, {}});
    else
      changed.push_back({name, ta, it->second});
  }
  for (const auto& [name, tb] : b)
    if (!a.count(name)) added.push_back({name, {}, tb});
  auto by_abs = [](const Row& x, const Row& y) {
    return std::fabs(x.delta()) > std::fabs(y.delta());
  };
  std::sort(added.begin(), added.end(), by_abs);
  std::sort(removed.begin(), removed.end(), by_abs);
  std::vector<Row> increased, decreased;
  for (const Row& r : changed) (r.delta() > 0 ? increased : decreased).push_back(r);
  std::sort(increased.begin(), increased.end(), by_abs);
  std::sort(decreased.begin(), decreased.end(), by_abs);
  report::Table& t = sec.AddTable(id, fmt::format("{} with the largest changes (per step)", what),
                                  {{"change", "Change", Unit::kText},
                                   {"name", "Name", Unit::kText, true, false, 80},
                                   {"count_a", "Count A", Unit::kNumber},
                                   {"count_b", "Count B", Unit::kNumber},
                                   {"time_a_s", "Time A", Unit::kSeconds},
                                   {"time_b_s", "Time B", Unit::kSeconds},
                                   {"delta_s", "Delta", Unit::kSeconds}});
  t.charts.push_back({.kind = report::ChartKind::kBars,
                      .title = fmt::format("{}: change per step (B - A)", what),
                      .label = "name",
                      .values = {"delta_s"}});
  auto emit = [&](const std::vector<Row>& rows, const char* change) {
    for (size_t i = 0; i < rows.size() && i < static_cast<size_t>(top_n); ++i) {
      const Row& r = rows[i];
      t.rows.push_back({std::string(change), r.name, r.a.count, r.b.count, r.a.ns / 1e9,
                        r.b.ns / 1e9, r.delta() / 1e9});
    }
  };
  emit(increased, "increased");
  emit(decreased, "decreased");
  emit(added, "added");
  emit(removed, "removed");
  t.notes.push_back(fmt::format("{} names only in A (removed), {} only in B (added), {} in both.",
                                removed.size(), added.size(), changed.size()));
}

std::array<double, kNumCategories + 1> AvgCategories(const DiffSide& s) {
  std::array<double, kNumCategories + 1> v{};  // last: step time
  double n = 0;
  for (const RankAnalysis& a : *s.analyses) {
    if (a.overview.steps.empty()) continue;
    n += 1;
    for (int c = 0; c < kNumCategories; ++c) v[c] += a.overview.avg_ns[c];
    v[kNumCategories] += a.overview.avg_total_ns;
  }
  if (n > 0)
    for (double& x : v) x /= n;
  return v;
}

// The step table's title: each side's column is its average step, or its capture window when
// it marks no steps.
std::string StepTableTitle(bool a_windows, bool b_windows) {
  if (a_windows && b_windows) return "Capture window by category (no steps marked)";
  if (!a_windows && !b_windows) return "Average step time by category";
  return fmt::format("Average step time by category ({}: its capture window, no steps marked)",
                     a_windows ? "A" : "B");
}

}  // namespace

report::Report BuildDiffReport(const DiffSide& a, const DiffSide& b, int top_n) {
  report::Report r;
  r.kind = "diff";
  r.title = fmt::format("trainprof diff: {} -> {}", a.label, b.label);
  r.AddMeta("a", a.label);
  r.AddMeta("b", b.label);
  r.AddMeta("ranks_a", static_cast<int64_t>(a.models->size()));
  r.AddMeta("ranks_b", static_cast<int64_t>(b.models->size()));

  report::Section& s = r.AddSection("diff", "What changed from A to B");
  const std::string da = DeviceOf(a), db = DeviceOf(b);
  const bool other_device = !da.empty() && !db.empty() && da != db;
  if (!da.empty() && !db.empty()) {
    r.AddMeta("device_a", da);
    r.AddMeta("device_b", db);
    if (other_device)
      s.findings.push_back(
          {report::Severity::kInfo,
           fmt::format("A ran on {}, B on {}: kernels are compared by family and operators by "
                       "their GPU time, since kernel names differ between devices.",
                       da, db)});
  }
  auto ca = AvgCategories(a), cb = AvgCategories(b);
  const bool wa = WindowsOnly(a), wb = WindowsOnly(b);
  report::Table& t = s.AddTable("step_time_diff", StepTableTitle(wa, wb),
                                {{"category", "Category", Unit::kText},
                                 {"a_s", "A", Unit::kSeconds},
                                 {"b_s", "B", Unit::kSeconds},
                                 {"delta_s", "Delta", Unit::kSeconds},
                                 {"delta_pct", "Delta %", Unit::kPercent}});
  t.charts.push_back({.kind = report::ChartKind::kBars,
                      .title = "Change of the average step by category (B - A)",
                      .label = "category",
                      .values = {"delta_s"}});
  auto row = [&](const std::string& name, double x, double y) {
    Value pct = x > 0 ? Value(100 * (y - x) / x) : Value(std::monostate{});
    t.rows.push_back({name, x / 1e9, y / 1e9, (y - x) / 1e9, pct});
  };
  for (int c = 0; c < kNumCategories; ++c) row(CategoryTitle(c), ca[c], cb[c]);
  const auto ops_a = PerStep(a, false), ops_b = PerStep(b, false);
  const double shared_a = SharedCalls(ops_a, ops_b), shared_b = SharedCalls(ops_b, ops_a);
  const bool other_model = std::min(shared_a, shared_b) < kSameModelShare;
  if (other_model) {
    s.findings.push_back(
        {report::Severity::kWarning,
         fmt::format("A and B look like different models or workloads: {:.0f} % of A's operator "
                     "calls and {:.0f} % of B's are of operators the other runs. Their step times "
                     "are compared below, but a change between them is not a speed-up of one "
                     "model.",
                     100 * shared_a, 100 * shared_b)});
  }
  double sa = ca[kNumCategories], sb = cb[kNumCategories];
  const char* total = wa && wb ? "Capture window" : wa || wb ? "Step or window" : "Step time";
  t.footer.push_back({std::string(total), sa / 1e9, sb / 1e9, (sb - sa) / 1e9,
                      sa > 0 ? Value(100 * (sb - sa) / sa) : Value(std::monostate{})});
  AddStepVerdict(s, a, b, sa, sb, other_model);
  AddChangeTables(s, "CPU operators", "operator_diff", ops_a, ops_b, top_n);
  if (!other_device)
    AddChangeTables(s, "GPU kernels", "kernel_diff", PerStep(a, true), PerStep(b, true), top_n);
  AddGpuWorkDiff(s, a, b, top_n, other_device);
  AddRoleDiff(s, a, b);
  return r;
}

}  // namespace trainprof::analysis
