// A sampler source: one kind of hardware or kernel interface the system sampler reads every
// sample (/proc and /sys, NVML, ROCm SMI, RAPL). Each is one file with a class implementing
// Source and one line in SamplerSources() (sampler.cc); the sampler gives every source a slice
// of the sample row, in list order, and asks each what it cannot measure.
//
//   class MySource : public Source {
//     void AddColumns(std::vector<SeriesColumn>& cols) override { cols.push_back({...}); }
//     void Read(const SampleRow& row) override { row.values[row.first] = ReadIt(); }
//   };
//   {"my source", [](const SourceContext& c) -> std::unique_ptr<Source> { ... }},
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "system/system_data.h"

namespace trainprof::system {

class DiagnosticSink;
struct SamplerState;

// What a source is made with.
struct SourceContext {
  const SamplerOptions& options;
  DiagnosticSink* diagnostics;
  int first_gpu;          // the index its first GPU gets (GPUs of the sources before it first)
  SamplerState* sampler;  // the sampler's own state: for the host and GPU summary sources
};

// One sample as a source sees it: the whole row, and where its own columns start.
struct SampleRow {
  double* values;
  size_t first;  // the index of this source's first column in `values`
  double dt_s;   // seconds since the previous sample; NaN on the first
  int64_t t_ns;  // the sample's time, ns since SamplerOptions::t0_ns
};

// A process's use of the GPUs a source sees.
struct ProcessGpuUse {
  double memory_bytes = 0;                                         // on all of them
  double util_percent = std::numeric_limits<double>::quiet_NaN();  // summed; NaN: no sample
};

class Source {
 public:
  virtual ~Source() = default;
  // One line for the report's notes when it measures nothing (absent, switched off,
  // unreadable), else "".
  virtual std::string why_not() const { return ""; }
  // Appends the columns it fills; `cols` holds those of the sources before it.
  virtual void AddColumns(std::vector<SeriesColumn>& cols) = 0;
  // Writes its columns' values for one sample (they are NaN when it writes nothing).
  virtual void Read(const SampleRow& row) = 0;
  // The GPUs it samples (their columns are GpuColumns(index)), and the energy it measured.
  virtual std::vector<GpuInfo> gpus() const { return {}; }
  virtual std::vector<EnergyDevice> Energy() const { return {}; }
  // GPU memory and utilization of those of `pids` that use one of its GPUs.
  virtual std::map<int64_t, ProcessGpuUse> ReadProcesses(const std::vector<int64_t>& pids) {
    (void)pids;
    return {};
  }
};

struct SourceEntry {
  const char* name;  // "NVML": for the documentation and tests
  std::unique_ptr<Source> (*make)(const SourceContext& context);
};

// The figures of one GPU, in the order of GpuColumns() (every GPU source fills them; a figure
// a device does not report stays NaN).
enum GpuFigure {
  kGpuUtil,
  kGpuMemUtil,
  kGpuMemUsed,
  kGpuMemUsedPct,
  kGpuPower,
  kGpuPowerPct,
  kGpuTemp,
  kGpuSmClock,
  kGpuMemClock,
  kGpuPcieTx,
  kGpuPcieRx,
  kGpuEnergy,
  kGpuFigures
};
// The column definitions of GPU `index`, kGpuFigures of them ("gpu0_power_w", ...).
std::vector<SeriesColumn> GpuColumns(int index);

// A GPU's energy since the start: from its energy counter where it has one, else its power
// integrated over time (trapezoids between samples).
struct GpuEnergy {
  bool counter_works = true;  // false once the library said the GPU has none
  bool have_counter = false;  // a first counter reading was taken
  double counter_j = 0, integrated_j = 0;
  double last_power_w = std::numeric_limits<double>::quiet_NaN();
  // Integrates `power_w` (NaN: not read) over the `dt_s` since the previous sample.
  void AddPower(double power_w, double dt_s);
  bool from_counter() const { return counter_works && have_counter; }
  double joules() const { return from_counter() ? counter_j : integrated_j; }
};

// The energy table's rows of GPUs `gpus` (parallel to `energy`): "GPU 2: <name>", with the
// source named after `library` ("NVML energy counter", "ROCm SMI power integrated over time").
std::vector<EnergyDevice> GpuEnergyRows(const std::vector<GpuInfo>& gpus,
                                        const std::vector<const GpuEnergy*>& energy,
                                        const char* library);

// The sources of every sampler, in column order: the host (/proc, /sys), NVML, ROCm SMI, the
// GPU summary (averages, the process tree's GPU use), and CPU energy (RAPL). Mutable so that a
// test can add a source of its own (and remove it again); samplers made later use the list.
std::vector<SourceEntry>& SamplerSources();

// Made by the files of the sources (the list's entries).
std::unique_ptr<Source> MakeHostSource(const SourceContext& c);        // host_figures.cc
std::unique_ptr<Source> MakeGpuSummarySource(const SourceContext& c);  // sampler.cc
std::unique_ptr<Source> MakeNvmlSource(const SourceContext& c);
std::unique_ptr<Source> MakeRocmSmiSource(const SourceContext& c);
std::unique_ptr<Source> MakeRaplSource(const SourceContext& c);

}  // namespace trainprof::system
