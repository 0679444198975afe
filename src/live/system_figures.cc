#include "live/system_figures.h"

#include <cmath>
#include <optional>
#include <string>

namespace trainprof::live {

namespace {

// The latest sample's value of `key`, or nullopt (no such column, NaN, no sample).
std::optional<double> LatestValue(const system::SystemSampler::Latest& latest,
                                  const std::vector<system::SeriesColumn>& cols,
                                  const std::string& key) {
  const int c = system::FindColumn(cols, key);
  if (c < 0 || static_cast<size_t>(c) >= latest.values.size() ||
      std::isnan(latest.values[static_cast<size_t>(c)]))
    return std::nullopt;
  return latest.values[static_cast<size_t>(c)];
}

}  // namespace

std::vector<live::LiveDevice> LiveDevices(const system::SystemSampler& sampler) {
  std::vector<live::LiveDevice> out;
  const system::SystemSampler::Latest latest = sampler.LatestSample();
  if (latest.t_ns < 0) return out;
  const auto& cols = sampler.columns();
  for (int i = 0; system::FindColumn(cols, "gpu" + std::to_string(i) + "_utilization_percent") >= 0;
       ++i) {
    const std::string gpu = "gpu" + std::to_string(i) + "_";
    out.push_back({i, LatestValue(latest, cols, gpu + "utilization_percent"),
                   LatestValue(latest, cols, gpu + "memory_used_bytes"),
                   LatestValue(latest, cols, gpu + "memory_used_percent"),
                   LatestValue(latest, cols, gpu + "power_w")});
  }
  return out;
}

void AddLiveProcessTree(const system::SystemSampler& sampler, live::LiveSnapshot& s) {
  const system::SystemSampler::Latest latest = sampler.LatestSample();
  if (latest.t_ns < 0) return;
  if (auto rss = LatestValue(latest, sampler.columns(), "process_rss_bytes")) s.rss_bytes = rss;
  if (auto cpu = LatestValue(latest, sampler.columns(), "process_cpu_percent")) s.cpu_pct = cpu;
}

}  // namespace trainprof::live
