// The live view's snapshot (issue 57): the figures of a running Session at one tick, as
// <run folder>/live.json and as one line of text. The Session's live view writes it
// (session/live.h); `trainprof watch RUN_DIR` reads it from another terminal. Figures not
// measured are absent from the JSON and "n/a" in the line, never 0.
//
//   LiveSnapshot s = BuildLiveSnapshot(steps, boundaries_ns, batches, now_ns, batch_size);
//   std::string line = LiveLine(s);   // "trainprof live: step 120 | 41.2 ms/step (median ..."
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "trainprof/status.h"

namespace trainprof::live {

// Shares (0..1) of the loop thread's time since the last tick in the scopes of each kind
// (ActionKind): data wait (dataloader), forward, backward, optimizer, communication; other is
// the rest.
struct LiveSplit {
  double data_wait = 0, forward = 0, backward = 0, optimizer = 0, communication = 0, other = 0;
  // Whether anything measures the data wait (a data-loader scope, trainprof.timed_iter): else
  // data_wait is not 0 but unknown, shown as n/a and left out of live.json and the metrics.
  bool data_measured = true;
};

// One GPU's latest sample (the system sampler's NVML / ROCm SMI figures).
struct LiveDevice {
  int64_t index = 0;
  std::optional<double> util_pct, memory_bytes, memory_pct, power_w;
};

// One rank as rank 0 sees it in a multi-rank run (live/world.h).
struct LiveRank {
  int64_t rank = 0, step = 0;
  std::optional<double> step_median_s, samples_per_s, communication;  // communication: share
  std::optional<double> compute_s;  // step time outside collectives: the rank's own work
  std::string role;  // "late in collectives", "waiting in collectives", "" (not known)
};

// The world of ranks on rank 0: kilobytes whatever the world's size.
struct LiveWorld {
  int64_t world_size = 0, reporting = 0;
  std::optional<double> samples_per_s;  // summed over the ranks that say
  std::optional<double> step_skew;      // slowest / fastest median step time
  std::vector<LiveRank> slowest;        // top 3 by their own work (compute_s), else step time
  std::vector<std::string> missing;     // "rank 3: no snapshot for 12 s (last at step 340)"
};

// The figures of one tick. Times in seconds; nullopt: not measured (yet).
struct LiveSnapshot {
  int64_t step = 0;              // Step() calls so far
  double elapsed_s = 0;          // since the session started
  bool finished = false;         // the session has finished (the last snapshot)
  std::optional<int64_t> epoch;  // the loop's SetEpoch(), when it set one
  std::optional<double> step_last_s, step_median_s, step_p95_s;  // over the window
  std::vector<double> recent_step_s;  // the last steps' times (at most kLiveSpark), oldest first
  std::optional<double> steps_per_s, samples_per_s;
  std::optional<int64_t> batch_size;
  std::optional<double> rss_bytes, cpu_pct;        // this process; cpu_pct of one core
  std::optional<double> rss_growth_bytes_per_min;  // over the last minute (memory creep)
  std::optional<LiveSplit> split;                  // nullopt: no scope of a known kind ran
  // Memory by role at the end of the last sampled step, in the loop (trainprof.torch attached
  // with the optimizer, or the LibTorch job's TrackRoles): bytes; other is the allocator's
  // total less the roles (one GPU only).
  std::optional<int64_t> roles_step;
  std::optional<double> parameter_bytes, gradient_bytes, optimizer_state_bytes, other_bytes;
  std::vector<LiveDevice> devices;  // empty: no GPU sampled
  std::string verdict;              // "input-bound", "GPU-bound", ...; "" not known yet
  std::string finding;              // the one sentence that matters now; "" none
  std::optional<LiveWorld> world;   // rank 0 of a multi-rank run
};

constexpr size_t kLiveSpark = 40;  // steps drawn in the view's sparkline

// Sets s.verdict and s.finding from the split, the devices and the memory creep: input-bound
// (data wait >= 25 % of the loop), communication-bound (collectives >= 25 %), GPU-bound (the
// busiest GPU >= 80 % utilised), host-bound (GPUs idle half the time or more), compute-bound
// (CPU) when no GPU is sampled; "" when nothing says.
void AddLiveVerdict(LiveSnapshot& s);

// `steps` Step() calls so far; `boundaries_ns` the last steps' boundaries, ns after the
// session's start (the start, or an earlier step's end, then each later step's end): step
// times are their differences, throughput over them. `batches[i]`: the batch size of the step
// ending at boundaries_ns[i] (0 unknown; [0] unused): samples/s when every one is known, so a
// validation stage with a larger batch counts its own. `batch_size`: the current one (0 unknown).
LiveSnapshot BuildLiveSnapshot(int64_t steps, const std::vector<int64_t>& boundaries_ns,
                               const std::vector<int64_t>& batches, int64_t now_ns,
                               int64_t batch_size);

std::string LiveJson(const LiveSnapshot& s);
// Errors: not JSON, or not a live.json (no "step"); the message names `where`.
StatusOr<LiveSnapshot> ParseLiveJson(const std::string& text, const std::string& where);
// One line: "step 120 | 41.2 ms/step (median 40.8, p95 44.0) | 24.3 steps/s, 777 samples/s |
// RSS 512 MiB, CPU 98 %"; "n/a" for what is not measured.
std::string LiveLine(const LiveSnapshot& s);
// The snapshot's figures as tracker scalars, under the names MLflow and anemoi use where they
// have one: training_rate and live/samples_per_s (samples/s), live/step_time_s (the median),
// live/steps_per_s, live/rss_bytes, live/cpu_pct, live/<split part>_share,
// live/{parameter,gradient,optimizer_state,other}_bytes,
// system/gpu_<i>_utilization_percentage, system/gpu_<i>_memory_usage_megabytes,
// system/gpu_<i>_power_usage_watts. Unmeasured figures are left out.
std::vector<std::pair<std::string, double>> LiveScalars(const LiveSnapshot& s);

// The terminal view: a header line, a step-time sparkline, the split as a bar, host and device
// rows, the verdict; `width` columns at most per line.
std::vector<std::string> LiveView(const LiveSnapshot& s, int width);

}  // namespace trainprof::live
