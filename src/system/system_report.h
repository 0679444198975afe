// Turns the sampler's SystemData into the report's "system" section (summary per figure, energy,
// per-core detail, the full time series) and into counter tracks for trace.json.
//
//   system::SystemData data = sampler->TakeData();
//   system::AddSystemSection(data, /*training_samples=*/60000, report);
//   for (const system::CounterTrack& c : system::CounterTracks(data)) ... write "C" events
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "report/report.h"
#include "system/sampler.h"
#include "trace/chrome_trace_writer.h"

namespace trainprof::system {

// Adds the section and moves the sampler's diagnostics into the report. `training_samples`:
// samples trained during the sampled time (0: energy per training sample is not shown).
void AddSystemSection(const SystemData& data, int64_t training_samples, report::Report& r);

// One counter track: values in the unit its name gives ("Process RSS (MiB)").
using CounterTrack = trace::CounterTrack;
// Tracks for the figures marked `trace`, NaN samples left out, empty tracks dropped.
std::vector<CounterTrack> CounterTracks(const SystemData& data);

}  // namespace trainprof::system
