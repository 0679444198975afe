#include "system/system_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string_view>

namespace trainprof::system {

using report::Column;
using report::Unit;
using report::Value;

namespace {

struct Stats {
  int64_t n = 0;
  double sum = 0, min = 0, max = 0, last = 0;
};

Stats ColumnStats(const SystemData& d, size_t col) {
  Stats s;
  for (size_t r = 0; r < d.t_ns.size(); ++r) {
    const double v = d.At(r, col);
    if (std::isnan(v)) continue;
    s.min = s.n == 0 ? v : std::min(s.min, v);
    s.max = s.n == 0 ? v : std::max(s.max, v);
    s.sum += v;
    s.last = v;
    ++s.n;
  }
  return s;
}

Value Num(double v) { return std::isnan(v) ? Value() : Value(v); }

report::Table& SummaryTable(report::Section& s, const std::string& id, const std::string& title,
                            report::TableKind kind) {
  return s.AddTable(id, title,
                    {{"figure", "Figure", Unit::kText},
                     {"key", "Key", Unit::kText, false},
                     {"unit", "Unit", Unit::kText, false},
                     {"mean", "Mean", Unit::kByRow},
                     {"min", "Min", Unit::kByRow},
                     {"max", "Max", Unit::kByRow},
                     {"last", "Last", Unit::kByRow},
                     {"samples", "Samples", Unit::kCount}},
                    kind);
}

void AddSummaryRow(report::Table& t, const SeriesColumn& c, const Stats& st) {
  t.rows.push_back({c.title, c.key, std::string(report::UnitName(c.unit)),
                    st.sum / static_cast<double>(st.n), st.min, st.max, st.last, st.n});
  t.row_units.push_back(c.unit);
}

// One row per process of the sampled tree (`trainprof run`), the heaviest CPU users first.
void AddProcessTable(const SystemData& d, report::Section& s) {
  report::Table& t = s.AddTable("processes", "Processes of the tree",
                                {{"pid", "PID", Unit::kId},
                                 {"ppid", "Parent", Unit::kCount},
                                 {"started_s", "Started", Unit::kSeconds},
                                 {"last_seen_s", "Last seen", Unit::kSeconds},
                                 {"cpu_s", "CPU time", Unit::kSeconds},
                                 {"cpu_percent", "CPU", Unit::kPercent},
                                 {"peak_rss_bytes", "Peak RSS", Unit::kBytes},
                                 {"max_threads", "Threads", Unit::kCount},
                                 {"read_bytes", "Read", Unit::kBytes},
                                 {"write_bytes", "Written", Unit::kBytes},
                                 {"peak_gpu_memory_bytes", "GPU memory", Unit::kBytes},
                                 {"max_gpu_util_percent", "GPU SM", Unit::kPercent},
                                 {"command", "Command", Unit::kText}});
  std::vector<const ProcessStats*> order;
  for (const ProcessStats& p : d.processes) order.push_back(&p);
  std::ranges::stable_sort(order, [](auto* a, auto* b) { return a->cpu_s > b->cpu_s; });
  const bool gpu = !d.gpus.empty();
  for (const ProcessStats* p : order) {
    const double from = static_cast<double>(p->start_ns) * 1e-9;
    const double to = static_cast<double>(p->last_ns) * 1e-9;
    // CPU share from its start to the last sample that saw it (its CPU time is from then).
    const Value cpu_pct = to > from ? Value(100.0 * p->cpu_s / (to - from)) : Value();
    t.rows.push_back({p->pid, p->ppid, from, to, p->cpu_s, cpu_pct, p->peak_rss_bytes,
                      static_cast<int64_t>(p->max_threads), p->read_bytes, p->write_bytes,
                      gpu ? Value(p->peak_gpu_memory_bytes) : Value(),
                      p->max_gpu_util_percent >= 0 ? Value(p->max_gpu_util_percent) : Value(),
                      p->command});
  }
  t.notes.push_back(
      "every process of the command's tree seen by a sample; Started: its start, from the run's "
      "start (negative: before it); CPU: its CPU time / the time from its start to the last "
      "sample that saw it (100 % = one core); Read / Written: storage I/O "
      "(/proc/PID/io); GPU: NVML's peak memory and SM utilization of that PID");
}

using Key = std::string_view;

// A per-device GPU column ("gpu0_utilization_percent"), not the average over devices.
bool PerGpu(Key k, Key suffix) {
  return k.starts_with("gpu") && k.ends_with(suffix) && !k.starts_with("gpu_avg");
}

// report.html's line charts of the time series: the columns of each group the run sampled (a
// column with no value is left out of the chart when it is drawn).
void AddSystemCharts(report::Table& ts) {
  struct Group {
    const char* id;
    const char* title;
    bool (*match)(Key key, Unit unit);
  };
  static const Group kGroups[] = {
      {"system_cpu", "CPU utilization",
       [](Key k, Unit) { return k == "cpu_utilization_percent" || k == "process_cpu_percent"; }},
      {"system_memory", "Memory used",
       [](Key k, Unit) { return k == "system_memory_used_bytes" || k == "process_rss_bytes"; }},
      {"system_gpu_utilization", "GPU utilization",
       [](Key k, Unit) { return PerGpu(k, "_utilization_percent"); }},
      {"system_gpu_memory", "GPU memory used",
       [](Key k, Unit) { return PerGpu(k, "_memory_used_bytes"); }},
      {"system_power", "Power",
       [](Key k, Unit u) { return u == Unit::kWatts && !k.starts_with("gpu_avg"); }},
      {"system_io", "Disk and network",
       [](Key k, Unit) {
         return k == "disk_read_bytes_per_s" || k == "disk_write_bytes_per_s" ||
                k == "network_receive_bytes_per_s" || k == "network_transmit_bytes_per_s";
       }},
  };
  for (const Group& g : kGroups) {
    report::ChartHint h{
        .kind = report::ChartKind::kLines, .id = g.id, .title = g.title, .label = "time_s"};
    for (const Column& c : ts.columns)
      if (g.match(c.key, c.unit)) h.values.push_back(c.key);
    if (!h.values.empty()) ts.charts.push_back(std::move(h));
  }
}

}  // namespace

void AddSystemSection(const SystemData& d, int64_t training_samples, report::Report& r) {
  report::Section& s = r.AddSection("system", "System report");
  for (const std::string& n : d.notes) s.notes.push_back(n);
  const int64_t samples = static_cast<int64_t>(d.t_ns.size());
  const double wall_s = d.wall_s > 0  ? d.wall_s
                        : samples > 0 ? static_cast<double>(d.t_ns.back()) * 1e-9
                                      : 0;
  s.AddMetric("total_execution_time_s", "Total execution time", wall_s, Unit::kSeconds);
  s.AddMetric("samples", "Samples", samples, Unit::kCount);
  s.AddMetric("interval_s", "Sampling interval (system.interval_s)", d.interval_s, Unit::kSeconds);
  if (d.wall_s > 0) {
    s.AddMetric("sampler_cpu_percent", "Sampler cost (CPU of one core)",
                100.0 * d.thread_cpu_s / d.wall_s, Unit::kPercent);
  }
  if (d.reads > 0) {
    s.AddMetric("sample_cpu_s", "CPU time per sample", d.thread_cpu_s / d.reads, Unit::kSeconds);
  }
  s.AddMetric("sample_wall_s", "Wall time per sample (mean)", d.sample_mean_s, Unit::kSeconds);

  double energy_j = 0;
  for (const EnergyDevice& e : d.energy) energy_j += e.joules;
  const bool have_energy = !d.energy.empty();
  s.AddMetric("energy_total_j", "Energy, all devices", have_energy ? Value(energy_j) : Value(),
              Unit::kJoules);
  s.AddMetric("energy_total_wh", "Energy, all devices (Wh)",
              have_energy ? Value(energy_j / 3600.0) : Value(), Unit::kNumber, "Wh");
  const bool per_sample = have_energy && training_samples > 0;
  s.AddMetric("energy_per_training_sample_j", "Energy per training sample",
              per_sample ? Value(energy_j / static_cast<double>(training_samples)) : Value(),
              Unit::kJoules);
  if (!have_energy) {
    s.notes.push_back(
        "Energy: no device here reports energy (no GPU and no readable CPU "
        "counter), so no energy figures");
  }
  if (samples == 0) {
    s.findings.push_back({report::Severity::kWarning,
                          "no system sample was taken: the run ended before the first one"});
  }

  if (!d.gpus.empty()) {
    report::Table& g = s.AddTable("gpus", "GPUs",
                                  {{"index", "GPU", Unit::kCount},
                                   {"name", "Name", Unit::kText},
                                   {"memory_total_bytes", "Memory", Unit::kBytes},
                                   {"power_limit_w", "Power limit", Unit::kWatts}});
    for (const GpuInfo& gi : d.gpus) {
      g.rows.push_back(
          {static_cast<int64_t>(gi.index), gi.name, gi.memory_total_bytes, Num(gi.power_limit_w)});
    }
  }

  report::Table& t = SummaryTable(s, "system_report", "System figures", report::TableKind::kTable);
  std::vector<size_t> detail;
  for (size_t c = 0; c < d.columns.size(); ++c) {
    if (d.columns[c].detail) {
      detail.push_back(c);
      continue;
    }
    const Stats st = ColumnStats(d, c);
    if (st.n > 0) AddSummaryRow(t, d.columns[c], st);
  }
  t.notes.push_back(
      "rates and CPU shares are over the interval before each sample; memory, "
      "disk usage and GPU figures are read at the sample");
  if (!detail.empty()) {
    // A handful of rows fits on screen; a 128-core machine's go to the CSV and JSON only.
    report::Table& c =
        SummaryTable(s, "system_detail", "Per CPU core and network interface",
                     detail.size() <= 16 ? report::TableKind::kTable : report::TableKind::kDetail);
    for (size_t col : detail) {
      const Stats st = ColumnStats(d, col);
      if (st.n > 0) AddSummaryRow(c, d.columns[col], st);
    }
  }

  if (!d.processes.empty()) AddProcessTable(d, s);
  if (have_energy) {
    report::Table& e = s.AddTable("energy", "Energy",
                                  {{"device", "Device", Unit::kText},
                                   {"source", "Source", Unit::kText},
                                   {"energy_j", "Energy", Unit::kJoules},
                                   {"energy_wh", "Energy (Wh)", Unit::kNumber},
                                   {"mean_power_w", "Mean power", Unit::kWatts}});
    auto power = [&](double j) { return wall_s > 0 ? Value(j / wall_s) : Value(); };
    for (const EnergyDevice& dev : d.energy) {
      e.rows.push_back(
          {dev.device, dev.source, dev.joules, dev.joules / 3600.0, power(dev.joules)});
    }
    e.footer.push_back(
        {std::string("Total"), std::string("-"), energy_j, energy_j / 3600.0, power(energy_j)});
    if (per_sample) {
      e.notes.push_back(fmt::format("{:.4g} J per training sample ({} samples trained)",
                                    energy_j / static_cast<double>(training_samples),
                                    training_samples));
    }
  }

  std::vector<Column> cols = {{"time_s", "Time", Unit::kSeconds}};
  for (const SeriesColumn& c : d.columns) cols.push_back({c.key, c.title, c.unit});
  report::Table& ts = s.AddTable("system_timeseries", "System time series", std::move(cols),
                                 report::TableKind::kSeries);
  ts.rows.reserve(d.t_ns.size());
  for (size_t row = 0; row < d.t_ns.size(); ++row) {
    std::vector<Value> v;
    v.reserve(d.columns.size() + 1);
    v.emplace_back(static_cast<double>(d.t_ns[row]) * 1e-9);
    for (size_t c = 0; c < d.columns.size(); ++c) v.push_back(Num(d.At(row, c)));
    ts.rows.push_back(std::move(v));
  }
  AddSystemCharts(ts);
  for (const report::Diagnostic& diag : d.diagnostics) r.diagnostics.push_back(diag);
}

std::vector<CounterTrack> CounterTracks(const SystemData& d) {
  std::vector<CounterTrack> out;
  for (size_t c = 0; c < d.columns.size(); ++c) {
    const SeriesColumn& col = d.columns[c];
    if (!col.trace) continue;
    double scale = 1;
    const char* unit = "";
    switch (col.unit) {
      case Unit::kBytes:
        scale = 1.0 / (1 << 20), unit = "MiB";
        break;
      case Unit::kBytesPerSecond:
        scale = 1.0 / (1 << 20), unit = "MiB/s";
        break;
      case Unit::kPercent:
        unit = "%";
        break;
      case Unit::kWatts:
        unit = "W";
        break;
      case Unit::kCelsius:
        unit = "°C";
        break;
      case Unit::kMegahertz:
        unit = "MHz";
        break;
      case Unit::kJoules:
        unit = "J";
        break;
      default:
        break;
    }
    CounterTrack t;
    t.name = *unit ? fmt::format("{} ({})", col.title, unit) : col.title;
    for (size_t row = 0; row < d.t_ns.size(); ++row) {
      const double v = d.At(row, c);
      if (std::isnan(v)) continue;
      t.t_ns.push_back(d.t_ns[row]);
      t.values.push_back(v * scale);
    }
    if (!t.values.empty()) out.push_back(std::move(t));
  }
  return out;
}

}  // namespace trainprof::system
