#include "operators/operator_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <unordered_map>

namespace trainprof::torchlib {
namespace {

using report::Column;
using report::Unit;
using report::Value;

constexpr size_t kPeakRows = 10;  // operators listed per device at the peak

bool SeenCuda(const OpData& d) {
  return std::ranges::any_of(d.mem, [](const MemEvent& m) { return m.device_type == 1; });
}

// The operator table's columns: PyTorch's key_averages().table() names, plus CSV-only gross
// allocation columns when `gross`.
// The columns and values of the table: shapes, CUDA memory, GPU time, CSV-only gross bytes.
struct Shape {
  bool shapes = false, cuda = false, device = false, gross = false;
};

std::vector<Column> OperatorColumns(Shape k) {
  const bool shapes = k.shapes, cuda = k.cuda, gross = k.gross;
  std::vector<Column> c = {{"name", "Name", Unit::kText}};
  if (shapes) c.push_back({"input_shapes", "Input Shapes", Unit::kText});
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
  if (cuda) {
    c.push_back({"cuda_mem", "CUDA Mem", Unit::kBytes});
    c.push_back({"self_cuda_mem", "Self CUDA Mem", Unit::kBytes});
  }
  c.push_back({"calls", "# of Calls", Unit::kCount});
  if (gross) {
    c.push_back({"self_cpu_mem_allocated", "Self CPU Mem allocated", Unit::kBytes, false});
    c.push_back({"self_cpu_mem_freed", "Self CPU Mem freed", Unit::kBytes, false});
    if (cuda) {
      c.push_back({"self_cuda_mem_allocated", "Self CUDA Mem allocated", Unit::kBytes, false});
      c.push_back({"self_cuda_mem_freed", "Self CUDA Mem freed", Unit::kBytes, false});
    }
  }
  return c;
}

std::vector<Value> OperatorRow(const OpRow& r, double self_total_s, double self_device_total_s,
                               Shape k) {
  const bool shapes = k.shapes, cuda = k.cuda, gross = k.gross;
  auto pct_of = [](double s, double total) -> Value {
    return total > 0 ? Value(100.0 * s / total) : Value();
  };
  auto pct = [&](double s) { return pct_of(s, self_total_s); };
  std::vector<Value> v;
  v.reserve(16);
  auto add = [&v](Value x) { v.push_back(std::move(x)); };
  add(r.name);
  if (shapes) add(r.shapes);
  add(pct(r.self_s));
  add(r.self_s);
  add(pct(r.total_s));
  add(r.total_s);
  add(r.total_s / static_cast<double>(r.calls));
  if (k.device) {
    add(r.self_device_s);
    add(pct_of(r.self_device_s, self_device_total_s));
    add(r.device_total_s);
    add(r.device_total_s / static_cast<double>(r.calls));
  }
  add(r.total_net[kCpu]);
  add(r.self_net[kCpu]);
  if (cuda) {
    add(r.total_net[kCuda]);
    add(r.self_net[kCuda]);
  }
  add(r.calls);
  if (gross) {
    add(r.self_alloc[kCpu]);
    add(r.self_freed[kCpu]);
    if (cuda) {
      add(r.self_alloc[kCuda]);
      add(r.self_freed[kCuda]);
    }
  }
  return v;
}

std::string StepsText(StepRange s) {
  return s.end - s.first == 1 ? fmt::format("step {}", s.first)
                              : fmt::format("steps {}-{}", s.first, s.end - 1);
}

void AddMemoryTables(const OperatorReportInput& in, const MemoryStats& mem, report::Section& s) {
  const OpData& d = in.data;
  for (const MemoryPeak& p : mem.peaks) {
    const std::string dev = DeviceName(p.device_type, p.device_index);
    s.AddMetric(fmt::format("peak_allocated_{}", dev), fmt::format("Peak {} memory allocated", dev),
                p.peak_allocated, Unit::kBytes, fmt::format("(step {})", p.step));
    if (p.peak_reserved > 0) {
      s.AddMetric(fmt::format("peak_reserved_{}", dev), fmt::format("Peak {} memory reserved", dev),
                  p.peak_reserved, Unit::kBytes);
    }
  }
  if (!mem.peaks.empty()) {
    report::Table& t =
        s.AddTable("memory_at_peak", "Memory live at the peak, by allocating operator",
                   {{"device", "Device", Unit::kText},
                    {"operator", "Allocated by", Unit::kText},
                    {"bytes", "Live bytes", Unit::kBytes},
                    {"pct_of_peak", "% of peak", Unit::kPercent}});
    for (const MemoryPeak& p : mem.peaks) {
      const std::string dev = DeviceName(p.device_type, p.device_index);
      for (size_t i = 0; i < p.live_by_op.size() && i < kPeakRows; ++i) {
        const auto& [op, bytes] = p.live_by_op[i];
        t.rows.push_back({dev, op, bytes,
                          p.peak_allocated > 0 ? Value(100.0 * static_cast<double>(bytes) /
                                                       static_cast<double>(p.peak_allocated))
                                               : Value()});
      }
    }
    t.notes.push_back(
        "Blocks still allocated when the allocated total peaked, grouped by the innermost "
        "operator that allocated them.");
  }
  if (!mem.activations.empty()) {
    report::Table& t = s.AddTable("activation_memory", "Activation memory per training step",
                                  {{"step", "Step", Unit::kCount},
                                   {"device", "Device", Unit::kText},
                                   {"bytes", "Activation memory", Unit::kBytes}});
    for (const StepActivation& a : mem.activations) {
      t.rows.push_back({a.step, std::string(a.device_class == kCuda ? "cuda" : "cpu"), a.bytes});
    }
    t.notes.push_back(
        "Bytes allocated during the step and still allocated when its backward pass began: the "
        "tensors saved for backward, plus the forward's outputs, the loss and its gradient seed "
        "(LibTorch 1.13 has no C++ saved-tensor hooks to count saved tensors one by one).");
  }
  if (d.mem.empty()) return;  // no allocator events (torch.profiler's events carry none)
  report::Table& tl = s.AddTable("memory_timeline", "Memory timeline",
                                 {{"time_s", "Time", Unit::kSeconds},
                                  {"step", "Step", Unit::kCount},
                                  {"device", "Device", Unit::kText},
                                  {"allocated_bytes", "Allocated", Unit::kBytes},
                                  {"reserved_bytes", "Reserved", Unit::kBytes}},
                                 report::TableKind::kSeries);
  tl.charts.push_back({.kind = report::ChartKind::kLines,
                       .title = "Memory timeline (allocated, peak marked)",
                       .label = "time_s",
                       .values = {"allocated_bytes", "reserved_bytes"},
                       .names = {"allocated", "reserved"},
                       .split_by = "device",
                       .mark_peak = true});
  report::Table* ev = nullptr;
  if (in.options.extra_plots) {
    ev = &s.AddTable("memory_events", "Allocator events",
                     {{"time_s", "Time", Unit::kSeconds},
                      {"step", "Step", Unit::kCount},
                      {"device", "Device", Unit::kText},
                      {"bytes", "Bytes (+alloc / -free)", Unit::kBytes},
                      {"address", "Address", Unit::kText},
                      {"operator", "Operator", Unit::kText}},
                     report::TableKind::kDetail);
  }
  for (const MemEvent& m : d.mem) {
    if (!in.steps.Contains(m.step)) continue;
    const std::string dev = DeviceName(m.device_type, m.device_index);
    const double t = static_cast<double>(m.t_ns) * 1e-9;
    tl.rows.push_back({t, m.step, dev, m.total_allocated, m.total_reserved});
    if (ev != nullptr) {
      ev->rows.push_back({t, m.step, dev, m.bytes, fmt::format("0x{:x}", m.ptr),
                          m.op == MemEvent::kNoOp ? std::string() : d.names[m.op]});
    }
  }
}

}  // namespace

void AddOperatorSection(const OperatorReportInput& in, report::Report& report) {
  const OpData& d = in.data;
  const Options::Memory& o = in.options;
  report::Section& s = report.AddSection("operators", "Operator and memory report");
  s.notes.push_back(fmt::format(
      "Recorded {} (memory.warmup = {}, memory.steps = {}); CPU times of the calling threads, "
      "as PyTorch's profiler measures them.",
      StepsText(in.steps), o.warmup, o.steps));

  if (in.steps_in_run < in.steps.end) {
    const int64_t got = std::max<int64_t>(0, in.steps_in_run - in.steps.first);
    report.diagnostics.push_back(
        {report::DiagnosticId::kMemoryScheduleNotReached, 1,
         fmt::format("the operator observer needs memory.warmup + memory.steps = {} steps, but the "
                     "run had {}: {}; run at least {} steps or lower memory.warmup/memory.steps",
                     in.steps.end, in.steps_in_run,
                     got == 0 ? std::string("no step was recorded")
                              : fmt::format("only {} of {} steps were recorded", got, o.steps),
                     in.steps.end)});
  }
  if (d.dropped_ops + d.dropped_mem > 0) {
    report.diagnostics.push_back(
        {report::DiagnosticId::kDroppedOperatorEvents,
         static_cast<int64_t>(d.dropped_ops + d.dropped_mem),
         fmt::format("{} operator calls and {} allocator reports were dropped: a thread's buffer "
                     "was full (buffer.events_per_thread); raise it or lower memory.steps",
                     d.dropped_ops, d.dropped_mem)});
  }
  if (d.too_deep > 0) {
    report.diagnostics.push_back(
        {report::DiagnosticId::kOperatorsNestedTooDeep, static_cast<int64_t>(d.too_deep),
         fmt::format("{} operator calls nested more than 128 deep were not timed", d.too_deep)});
  }

  std::vector<OpRow> rows =
      in.rows != nullptr ? *in.rows : AggregateOps(d, in.steps, o.group_by_input_shape);
  SortKey key = SortKey::kCpuTimeTotal;
  ParseSortKey(o.sort_by, &key);  // validated with the options
  SortOps(rows, key);
  double self_total = 0, self_device_total = 0;
  int64_t calls = 0;
  for (const OpRow& r : rows) {
    self_total += r.self_s;
    self_device_total += r.self_device_s;
    calls += r.calls;
  }
  s.AddMetric("self_cpu_time_total_s", "Self CPU time total", self_total, Unit::kSeconds);
  if (self_device_total > 0) {
    s.AddMetric("self_cuda_time_total_s", "Self CUDA time total", self_device_total,
                Unit::kSeconds);
  }
  s.AddMetric("operator_calls", "Operator calls", calls, Unit::kCount);
  if (rows.empty()) {
    s.notes.push_back("No operator ran in the recorded steps.");
  } else {
    Shape k{o.group_by_input_shape, SeenCuda(d) || in.cuda_memory, self_device_total > 0, false};
    const size_t shown = std::min<size_t>(rows.size(), static_cast<size_t>(o.row_limit));
    report::Table& top = s.AddTable(
        "operators_top", fmt::format("Top {} of {} operators by {}", shown, rows.size(), o.sort_by),
        OperatorColumns(k));
    top.charts.push_back({.kind = report::ChartKind::kBars,
                          .title = "Self CPU time by operator",
                          .label = "name",
                          .values = {"self_cpu_s"}});
    for (size_t i = 0; i < shown; ++i) {
      top.rows.push_back(OperatorRow(rows[i], self_total, self_device_total, k));
    }
    top.notes.push_back(fmt::format("Self CPU time total: {:.3f} ms. All operators: operators.csv.",
                                    self_total * 1e3));
    k.gross = in.gross_memory;
    report::Table& all =
        s.AddTable("operators", "All operators", OperatorColumns(k), report::TableKind::kDetail);
    for (const OpRow& r : rows) {
      all.rows.push_back(OperatorRow(r, self_total, self_device_total, k));
    }
  }
  AddMemoryTables(in, AnalyzeMemory(d, in.steps), s);
}

void AddOperatorTrace(const OperatorReportInput& in, session::TraceInput& trace) {
  const OpData& d = in.data;
  session::ExtraEvents x;
  x.cat = "cpu_op";
  x.names = d.names;
  std::vector<uint32_t> args_of_shapes(d.shapes.size(), session::ExtraEvents::kNoArgs);
  for (const OpEvent& e : d.ops) {
    if (!in.steps.Contains(e.step)) continue;
    uint32_t args = session::ExtraEvents::kNoArgs;
    if (e.shapes != 0) {
      uint32_t& a = args_of_shapes[e.shapes];
      if (a == session::ExtraEvents::kNoArgs) {
        a = static_cast<uint32_t>(x.args.size());
        x.args.push_back(fmt::format("\"Input Dims\":{}", d.shapes[e.shapes]));
      }
      args = a;
    }
    x.events.push_back({e.name, args, e.tid, e.begin_ns, e.dur_ns, e.step});
  }
  if (!x.events.empty()) trace.extra.push_back(std::move(x));

  std::map<std::pair<int16_t, int16_t>, std::pair<trace::CounterTrack, trace::CounterTrack>> tracks;
  for (const MemEvent& m : d.mem) {
    if (!in.steps.Contains(m.step)) continue;
    auto& [alloc, reserved] = tracks[{m.device_type, m.device_index}];
    alloc.t_ns.push_back(m.t_ns);
    alloc.values.push_back(static_cast<double>(m.total_allocated));
    reserved.t_ns.push_back(m.t_ns);
    reserved.values.push_back(static_cast<double>(m.total_reserved));
  }
  for (auto& [dev, pair] : tracks) {
    const std::string name = DeviceName(dev.first, dev.second);
    pair.first.name = fmt::format("Memory allocated ({}) [bytes]", name);
    trace.counters.push_back(std::move(pair.first));
    if (dev.first != 0) {  // the CPU allocator reserves nothing
      pair.second.name = fmt::format("Memory reserved ({}) [bytes]", name);
      trace.counters.push_back(std::move(pair.second));
    }
  }
}

}  // namespace trainprof::torchlib
