// The live view's figures from the system sampler's latest sample (issue 57): each GPU's
// utilization, memory and power, and the sampled process tree's CPU and RSS. Shared by the
// Session's view (session/live.cc) and `trainprof run`'s (cli/run_live.cc).
//
//   std::vector<live::LiveDevice> gpus = live::LiveDevices(sampler);
#pragma once

#include <vector>

#include "live/snapshot.h"
#include "system/sampler.h"

namespace trainprof::live {

// One row per GPU of the latest sample (NVML or ROCm SMI columns gpu<i>_*); empty before the
// first sample or without GPUs. Figures the sample lacks stay unmeasured.
std::vector<live::LiveDevice> LiveDevices(const system::SystemSampler& sampler);
// The process tree's RSS and CPU (% of one core) of the latest sample, where measured (the
// figures `s` has are kept otherwise).
void AddLiveProcessTree(const system::SystemSampler& sampler, live::LiveSnapshot& s);

}  // namespace trainprof::live
