// The GPU summary section: per GPU, utilization, SM efficiency, occupancy, Tensor Cores
// (gpu_metrics.h), and the headline figures the run history keeps.
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "analysis/sections/sections.h"

namespace trainprof::analysis {

using report::Unit;
using report::Value;

void AddGpuSection(const AnalyzeInput& in, report::Report& r) {
  report::Section& gs = r.AddSection("gpu", "GPU summary");
  AddRankTablesTable(
      gs, in, "gpu_summary", "GPU summary (over the steps)",
      {{"rank", "Rank", Unit::kText},
       {"device", "GPU", Unit::kCount},
       {"name", "Name", Unit::kText},
       {"memory_bytes", "Memory", Unit::kBytes},
       {"arch", "Architecture", Unit::kText},
       {"kernels", "Kernels", Unit::kCount},
       {"utilization_pct", "GPU utilization", Unit::kPercent},
       {"sm_efficiency_pct", "Est. SM efficiency", Unit::kPercent},
       {"occupancy_pct", "Est. achieved occupancy", Unit::kPercent},
       {"tensor_core_pct", "Kernel time on Tensor / matrix cores", Unit::kPercent}},
      [](const RankTables& t, const std::string& rank, std::vector<std::vector<Value>>& rows) {
        auto opt = [](const std::optional<double>& v) -> Value {
          return v ? Value(*v) : Value(std::monostate{});
        };
        for (const GpuSummary& g : t.gpus) {
          Value memory = g.memory_bytes > 0 ? Value(g.memory_bytes) : Value(std::monostate{});
          rows.push_back({rank, g.device, g.name, memory, g.arch, g.kernels, g.utilization_pct,
                          opt(g.sm_efficiency_pct), opt(g.occupancy_pct), g.tensor_core_pct});
        }
      });
  // Headline figures for run history and `trainprof compare`.
  double util_sum = 0;
  int64_t gpus = 0, peak = -1;
  ForEachRankTables(in, [&](size_t i, const RankTables& t) {
    for (const GpuSummary& g : t.gpus) util_sum += g.utilization_pct, ++gpus;
    for (const auto& [dev, bytes] : in.ranks[i].peak_allocated_bytes) peak = std::max(peak, bytes);
  });
  if (gpus == 0) gs.notes.push_back("No GPU kernels in the trace: a CPU-only run.");
  if (gpus > 0)
    gs.AddMetric("avg_utilization_pct", "GPU utilization (mean over GPUs)",
                 util_sum / static_cast<double>(gpus), Unit::kPercent);
  if (peak >= 0)
    gs.AddMetric("peak_allocated_bytes", "Peak memory allocated (largest GPU, [memory] events)",
                 peak, Unit::kBytes);
}

}  // namespace trainprof::analysis
