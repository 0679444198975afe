#include "analysis/operator_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <utility>

#include "analysis/key_averages.h"
#include "analysis/op_tree.h"
#include "analysis/units.h"

namespace trainprof::analysis {
namespace {

using report::Column;
using report::Unit;
using report::Value;

constexpr int kCpu = 0, kGpu = 1;

int64_t SelfNet(const KeyAverage& r, int d) { return r.self_alloc[d] - r.self_freed[d]; }

// torch's table(sort_by=...) keys; largest first.
using SortValue = std::function<double(const KeyAverage&)>;
SortValue SortValueOf(const std::string& name) {
  static const std::pair<const char*, SortValue> kKeys[] = {
      {"cpu_time_total", [](const KeyAverage& r) { return double(r.total_ns); }},
      {"self_cpu_time_total", [](const KeyAverage& r) { return double(r.self_ns); }},
      {"cuda_time_total", [](const KeyAverage& r) { return double(r.device_total_ns); }},
      {"self_cuda_time_total", [](const KeyAverage& r) { return double(r.self_device_ns); }},
      {"cpu_memory_usage", [](const KeyAverage& r) { return double(r.total_net[kCpu]); }},
      {"self_cpu_memory_usage", [](const KeyAverage& r) { return double(SelfNet(r, kCpu)); }},
      {"count", [](const KeyAverage& r) { return double(r.calls); }}};
  for (const auto& [n, f] : kKeys)
    if (name == n) return f;
  return kKeys[0].second;
}

// Which optional columns the table has.
struct TableShape {
  bool shapes = false, cuda = false, device = false, gross = false;
};

std::vector<Column> KeyAverageColumns(TableShape k) {
  std::vector<Column> c = {{"name", "Name", Unit::kText}};
  if (k.shapes) c.push_back({"input_shapes", "Input Shapes", Unit::kText});
  c.insert(c.end(), {{"self_cpu_pct", "Self CPU %", Unit::kPercent},
                     {"self_cpu_s", "Self CPU", Unit::kSeconds},
                     {"cpu_total_pct", "CPU total %", Unit::kPercent},
                     {"cpu_total_s", "CPU total", Unit::kSeconds},
                     {"cpu_time_avg_s", "CPU time avg", Unit::kSeconds}});
  if (k.device) {
    c.insert(c.end(), {{"self_cuda_s", "Self CUDA", Unit::kSeconds},
                       {"self_cuda_pct", "Self CUDA %", Unit::kPercent},
                       {"cuda_total_s", "CUDA total", Unit::kSeconds},
                       {"cuda_time_avg_s", "CUDA time avg", Unit::kSeconds}});
  }
  c.insert(c.end(),
           {{"cpu_mem", "CPU Mem", Unit::kBytes}, {"self_cpu_mem", "Self CPU Mem", Unit::kBytes}});
  if (k.cuda) {
    c.push_back({"cuda_mem", "CUDA Mem", Unit::kBytes});
    c.push_back({"self_cuda_mem", "Self CUDA Mem", Unit::kBytes});
  }
  c.push_back({"calls", "# of Calls", Unit::kCount});
  if (!k.gross) return c;
  c.push_back({"self_cpu_mem_allocated", "Self CPU Mem allocated", Unit::kBytes, false});
  c.push_back({"self_cpu_mem_freed", "Self CPU Mem freed", Unit::kBytes, false});
  if (k.cuda) {
    c.push_back({"self_cuda_mem_allocated", "Self CUDA Mem allocated", Unit::kBytes, false});
    c.push_back({"self_cuda_mem_freed", "Self CUDA Mem freed", Unit::kBytes, false});
  }
  return c;
}

struct TableTotals {
  int64_t self_ns = 0, self_device_ns = 0, calls = 0;
};

std::vector<Value> KeyAverageRow(const KeyAverage& r, TableTotals t, TableShape k) {
  auto pct = [](int64_t ns, int64_t total) -> Value {
    return total > 0 ? Value(100.0 * static_cast<double>(ns) / static_cast<double>(total))
                     : Value();
  };
  const double calls = static_cast<double>(r.calls);
  std::vector<Value> v;
  v.reserve(20);
  v.emplace_back(r.name);
  if (k.shapes) v.emplace_back(r.shapes);
  v.insert(v.end(), {pct(r.self_ns, t.self_ns), Seconds(r.self_ns), pct(r.total_ns, t.self_ns),
                     Seconds(r.total_ns), Seconds(r.total_ns) / calls});
  if (k.device) {
    v.insert(v.end(), {Seconds(r.self_device_ns), pct(r.self_device_ns, t.self_device_ns),
                       Seconds(r.device_total_ns), Seconds(r.device_total_ns) / calls});
  }
  v.insert(v.end(), {r.total_net[kCpu], SelfNet(r, kCpu)});
  if (k.cuda) v.insert(v.end(), {r.total_net[kGpu], SelfNet(r, kGpu)});
  v.emplace_back(r.calls);
  if (!k.gross) return v;
  v.insert(v.end(), {r.self_alloc[kCpu], r.self_freed[kCpu]});
  if (k.cuda) v.insert(v.end(), {r.self_alloc[kGpu], r.self_freed[kGpu]});
  return v;
}

bool HasGpuMemory(const trace::TraceModel& m) {
  return std::ranges::any_of(m.memory_events,
                             [](const trace::MemoryEvent& e) { return e.device_type == 1; });
}

}  // namespace

void AddOperatorTables(const trace::TraceModel& m, const std::vector<bool>* counted,
                       const OperatorTableOptions& o, report::Section& s) {
  std::vector<KeyAverage> rows =
      KeyAverages(m, BuildOpTree(m), o.by_shapes, counted, o.annotation_rows);
  const SortValue value = SortValueOf(o.sort_by);
  std::ranges::stable_sort(rows, [&](const KeyAverage& a, const KeyAverage& b) {
    const double va = value(a), vb = value(b);
    return va != vb ? va > vb : a.name < b.name;
  });
  TableTotals t;
  for (const KeyAverage& r : rows) {
    t.self_ns += r.self_ns;
    t.self_device_ns += r.self_device_ns;
    t.calls += r.calls;
  }
  s.AddMetric("self_cpu_time_total_s", "Self CPU time total", Seconds(t.self_ns), Unit::kSeconds);
  if (t.self_device_ns > 0) {
    s.AddMetric("self_cuda_time_total_s", "Self CUDA time total", Seconds(t.self_device_ns),
                Unit::kSeconds);
  }
  s.AddMetric("operator_calls", "Operator calls", t.calls, Unit::kCount);
  if (rows.empty()) {
    s.notes.push_back("No operator ran in the recorded steps.");
    return;
  }
  TableShape k{o.by_shapes, o.cuda_memory || HasGpuMemory(m), t.self_device_ns > 0, false};
  const size_t shown = std::min<size_t>(rows.size(), static_cast<size_t>(o.row_limit));
  report::Table& top = s.AddTable(
      "operators_top", fmt::format("Top {} of {} operators by {}", shown, rows.size(), o.sort_by),
      KeyAverageColumns(k));
  top.charts.push_back({.kind = report::ChartKind::kBars,
                        .title = "Self CPU time by operator",
                        .label = "name",
                        .values = {"self_cpu_s"}});
  for (size_t i = 0; i < shown; ++i) top.rows.push_back(KeyAverageRow(rows[i], t, k));
  top.notes.push_back(fmt::format("Self CPU time total: {:.3f} ms. All operators: operators.csv.",
                                  Seconds(t.self_ns) * 1e3));
  k.gross = o.gross_memory;
  report::Table& all =
      s.AddTable("operators", "All operators", KeyAverageColumns(k), report::TableKind::kDetail);
  for (const KeyAverage& r : rows) all.rows.push_back(KeyAverageRow(r, t, k));
}

}  // namespace trainprof::analysis
