// The key figures of a run: the handful of numbers run history stores, `trainprof runs list`
// shows and a regression gate bounds. Each is read from a finished Report (profile or analyze);
// a figure the run did not measure is empty (NaN), never 0.
//
//   KeyFigures k = history::ExtractKeyFigures(report);
//   double v = k.Get("training_throughput");
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "report/report.h"

namespace trainprof::history {

struct FigureInfo {
  const char* key;          // name in the database, --where and --fail-if: "training_throughput"
  const char* title;        // "Training throughput"
  const char* short_title;  // column heading in `runs list`: "Samples/s"
  report::Unit unit;
  const char* suffix;     // shown after the value: "samples/s"
  bool higher_is_better;  // for the sign of "better" / "worse" in comparisons
  const char* source;     // where it comes from, for --help and docs
};

inline constexpr std::array<FigureInfo, 7> kFigures = {{
    {"training_throughput", "Training throughput", "Samples/s", report::Unit::kPerSecond,
     "samples/s", true,
     "profile: speed.training_avg_throughput_per_sample (all ranks: ranks."
     "training_throughput_per_sample)"},
    // "Step", not "Training step": an analyze run of an inference trace has steps too.
    {"step_time", "Step time (mean)", "Step", report::Unit::kSeconds, "", false,
     "profile: speed_report mean of the training stage; analyze: overview.avg_step_time_s"},
    {"dataloader_share", "Data-loader share of the step", "Data wait", report::Unit::kPercent, "",
     false,
     "profile: speed.training_dataloader_wait_pct; analyze: DataLoader % of the step "
     "(mean over ranks)"},
    {"peak_memory", "Peak memory", "Peak mem", report::Unit::kBytes, "", false,
     "profile: peak CUDA memory allocated, else peak RSS; analyze: gpu.peak_allocated_bytes"},
    {"energy_per_sample", "Energy per training sample", "J/sample", report::Unit::kJoules, "",
     false, "profile: system.energy_per_training_sample_j"},
    {"gpu_utilization", "GPU utilization", "GPU util", report::Unit::kPercent, "", true,
     "profile: system GPU utilization (mean); analyze: gpu.avg_utilization_pct"},
    // Last, so that it is the column added by the history's schema 2.
    {"step_time_median", "Step time (median)", "Median", report::Unit::kSeconds, "", false,
     "profile: speed_report median of the training stage; analyze: median of the steps "
     "(each averaged over ranks)"},
}};

struct KeyFigures {
  std::array<double, kFigures.size()> values;  // parallel to kFigures; NaN when not measured
  KeyFigures();
  // NaN for a key that is not a key figure.
  double Get(std::string_view key) const;
};

KeyFigures ExtractKeyFigures(const report::Report& r);

// The index of `key` in kFigures, or -1.
int FigureIndex(std::string_view key);

// The device a run ran on, as its report says: profile's `device` ("cpu", "cuda"), analyze's
// `devices` (the GPUs of the trace); "" when the report does not say.
std::string RunDevice(const report::Report& r);

// FNV-1a hash (16 hex digits) of the report's configuration, output.* keys left out: two runs
// with the same hash trained the same way.
std::string ConfigHash(const report::Report& r);

}  // namespace trainprof::history
