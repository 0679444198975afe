// CPU energy as a sampler source: the power and the energy since the start, from the RAPL (or
// amd_energy) counters CpuEnergySource reads (sources.cc).
#include <fmt/format.h>

#include "system/sources.h"

namespace trainprof::system {
namespace {

class RaplSource : public Source {
 public:
  RaplSource(const std::string& root, DiagnosticSink* diagnostics) : energy_(root, diagnostics) {}
  std::string why_not() const override { return energy_.why_not(); }
  void AddColumns(std::vector<SeriesColumn>& cols) override {
    if (!energy_.available()) return;
    cols.push_back({"cpu_power_w", fmt::format("{} power", energy_.device_name()),
                    report::Unit::kWatts, false, true, ""});
    cols.push_back({"cpu_energy_j", fmt::format("{} energy since start", energy_.device_name()),
                    report::Unit::kJoules, false, false, ""});
  }
  void Read(const SampleRow& row) override {
    if (!energy_.available()) return;
    const double j = energy_.Read();
    if (!std::isnan(j) && row.dt_s > 0) row.values[row.first] = j / row.dt_s;
    if (!std::isnan(row.dt_s)) row.values[row.first + 1] = energy_.total_joules();
  }
  std::vector<EnergyDevice> Energy() const override {
    if (!energy_.available()) return {};
    return {{energy_.device_name(), "RAPL energy counter", energy_.total_joules()}};
  }

 private:
  CpuEnergySource energy_;
};

}  // namespace

std::unique_ptr<Source> MakeRaplSource(const SourceContext& c) {
  return std::make_unique<RaplSource>(c.options.root, c.diagnostics);
}

}  // namespace trainprof::system
