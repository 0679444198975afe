// The live view's figures from the system sampler's latest sample (issue 57): each GPU's
// utilization, memory and power, and the sampled process tree's CPU and RSS. Shared by the
// Session's view (session/live.cc) and `trainprof run`'s (cli/run_live.cc).
//
//   std::vector<report::LiveDevice> gpus = system::LiveDevices(sampler);
#pragma once

#include <vector>

#include "report/live_snapshot.h"
#include "system/sampler.h"

namespace trainprof::system {

// One row per GPU of the latest sample (NVML or ROCm SMI columns gpu<i>_*); empty before the
// first sample or without GPUs. Figures the sample lacks stay unmeasured.
std::vector<report::LiveDevice> LiveDevices(const SystemSampler& sampler);
// The process tree's RSS and CPU (% of one core) of the latest sample, where measured (the
// figures `s` has are kept otherwise).
void AddLiveProcessTree(const SystemSampler& sampler, report::LiveSnapshot& s);

}  // namespace trainprof::system
