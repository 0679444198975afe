#include "history/key_figures.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "history/step_series.h"
#include "report/format.h"

namespace trainprof::history {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double MetricValue(const report::Report& r, std::string_view section, std::string_view key) {
  const report::Section* s = r.FindSection(std::string(section));
  const report::Metric* m = s != nullptr ? s->FindMetric(key) : nullptr;
  return m != nullptr ? report::AsNumber(m->value) : kNaN;
}

// The value of `value_key` in the first row whose `match_key` column is `match`. A table of
// many ranks may be in its CSV only: its rows are read block by block, as the CSV writer reads
// them.
double RowValue(const report::Table* t, std::string_view match_key, std::string_view match,
                std::string_view value_key) {
  if (t == nullptr) return kNaN;
  const int m = t->ColumnIndex(match_key), v = t->ColumnIndex(value_key);
  if (m < 0 || v < 0) return kNaN;
  double found = kNaN;
  bool seen = false;
  t->ForEachRowBlock([&](const std::vector<std::vector<report::Value>>& rows) {
    for (const auto& row : rows) {
      const auto* s = std::get_if<std::string>(&row[m]);
      if (seen || s == nullptr || *s != match) continue;
      found = report::AsNumber(row[v]), seen = true;
    }
  });
  return found;
}

double ColumnMean(const report::Table* t, std::string_view key) {
  const int c = t != nullptr ? t->ColumnIndex(key) : -1;
  if (c < 0) return kNaN;
  double sum = 0;
  int n = 0;
  t->ForEachRowBlock([&](const std::vector<std::vector<report::Value>>& rows) {
    for (const auto& row : rows) {
      double v = report::AsNumber(row[c]);
      if (std::isfinite(v)) sum += v, ++n;
    }
  });
  return n > 0 ? sum / n : kNaN;
}

double FirstFinite(std::initializer_list<double> vs) {
  for (double v : vs)
    if (std::isfinite(v)) return v;
  return kNaN;
}

// The largest GPU peak of the memory section's memory_peaks table (the torch reports' recording:
// the LibTorch observer's allocator reports, or a torch.profiler trace), or the peak of the
// cuda_memory section (torch.cuda.memory_stats from the Python package).
double PeakCuda(const report::Report& r) {
  double peak = kNaN;
  auto consider = [&](const report::Value& value) {
    double v = report::AsNumber(value);
    if (std::isfinite(v) && !(v <= peak)) peak = v;
  };
  if (const report::Table* t = r.FindTable("memory", "memory_peaks")) {
    const int device = t->ColumnIndex("device"), peak = t->ColumnIndex("peak_allocated_bytes");
    for (const std::vector<report::Value>& row : t->rows) {
      if (device < 0 || peak < 0) break;
      const auto* name = std::get_if<std::string>(&row[static_cast<size_t>(device)]);
      if (name != nullptr && name->starts_with("GPU")) consider(row[static_cast<size_t>(peak)]);
    }
  }
  if (const report::Section* s = r.FindSection("cuda_memory")) {
    for (const report::Metric& m : s->metrics)
      if (m.key == "peak_allocated_bytes") consider(m.value);
  }
  return peak;
}

double MetaValue(const report::Report& r, std::string_view key) {
  const report::Value* v = r.FindMeta(key);
  return v != nullptr ? report::AsNumber(*v) : kNaN;
}

// The median of an analyze run's steps (each the mean over its ranks).
double MedianStep(const report::Report& r) {
  const StepSeries s = ExtractSteps(r);
  if (s.step_time_s.empty() || s.step_time_s[0].empty()) return kNaN;
  std::vector<double> v = s.step_time_s[0];
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 == 1 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

}  // namespace

KeyFigures::KeyFigures() { values.fill(kNaN); }

int FigureIndex(std::string_view key) {
  for (size_t i = 0; i < kFigures.size(); ++i)
    if (key == kFigures[i].key) return static_cast<int>(i);
  return -1;
}

double KeyFigures::Get(std::string_view key) const {
  const int i = FigureIndex(key);
  return i >= 0 ? values[static_cast<size_t>(i)] : kNaN;
}

KeyFigures ExtractKeyFigures(const report::Report& r) {
  KeyFigures k;
  auto set = [&](std::string_view key, double v) {
    k.values[static_cast<size_t>(FigureIndex(key))] = v;
  };
  if (r.kind == "analyze") {
    set("step_time", MetricValue(r, "overview", "avg_step_time_s"));
    set("step_time_median", MedianStep(r));
    // Without a single data-loader range in the trace, 0 % says nothing (the report says so).
    const bool unmarked = MetricValue(r, "phase_view", "dataloader_markers") == 0;
    set("dataloader_share",
        unmarked ? kNaN
                 : ColumnMean(r.FindTable("overview", "step_breakdown_average"), "dataloader_pct"));
    set("peak_memory", MetricValue(r, "gpu", "peak_allocated_bytes"));
    set("gpu_utilization", MetricValue(r, "gpu", "avg_utilization_pct"));
    return k;
  }
  set("training_throughput",
      FirstFinite({MetricValue(r, "ranks", "training_throughput_per_sample"),
                   MetricValue(r, "speed", "training_avg_throughput_per_sample")}));
  // A `run --traces` without a Session inside: the step time of the traces it collected.
  const report::Table* speed = r.FindTable("speed", "speed_report");
  set("step_time", speed != nullptr ? RowValue(speed, "stage", "training", "mean_s")
                                    : MetricValue(r, "overview", "avg_step_time_s"));
  set("step_time_median",
      speed != nullptr ? RowValue(speed, "stage", "training", "median_s") : MedianStep(r));
  set("dataloader_share", MetricValue(r, "speed", "training_dataloader_wait_pct"));
  set("peak_memory", FirstFinite({PeakCuda(r), MetaValue(r, "peak_rss_bytes")}));
  set("energy_per_sample", MetricValue(r, "system", "energy_per_training_sample_j"));
  set("gpu_utilization", RowValue(r.FindTable("system", "system_report"), "key",
                                  "gpu_avg_utilization_percent", "mean"));
  return k;
}

std::string RunDevice(const report::Report& r) {
  return report::MetaText(r, r.kind == "analyze" ? "devices" : "device");
}

std::string ConfigHash(const report::Report& r) {
  uint64_t h = 14695981039346656037ull;
  auto mix = [&](std::string_view s) {
    for (unsigned char c : s) {
      h ^= c;
      h *= 1099511628211ull;
    }
  };
  for (const auto& [key, value] : r.config) {
    if (key.starts_with("output.")) continue;
    mix(key);
    mix("=");
    mix(report::FormatMachine(value));
    mix("\n");
  }
  return fmt::format("{:016x}", h);
}

}  // namespace trainprof::history
