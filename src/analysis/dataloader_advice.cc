#include "analysis/dataloader_advice.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace trainprof::analysis {
namespace {

constexpr double kSpikeFactor = 4;  // a step waiting this many times the median's is a spike

double LoaderMs(double ns) { return ns / 1e6; }

std::string SpikeAdvice(LoaderWorkers w) {
  if (w == LoaderWorkers::kNone) {
    return "Load in worker processes that live across epochs: DataLoader(num_workers=N, "
           "persistent_workers=True, prefetch_factor=4, pin_memory=True).";
  }
  return "Keep the workers alive between epochs (persistent_workers=True) so an epoch does not "
         "start by waiting for them, and let them run further ahead (a larger prefetch_factor).";
}

std::string SteadyAdvice(LoaderWorkers w) {
  if (w == LoaderWorkers::kNone) {
    return "Loading runs in the training process (num_workers=0): set num_workers (about the "
           "CPU cores per GPU) and pin_memory=True.";
  }
  if (w == LoaderWorkers::kSome) {
    return "The workers cannot keep up: add workers (num_workers), or make each sample cheaper "
           "(decode and augment on the GPU, a faster storage format), with pin_memory=True.";
  }
  return "Prepare batches in parallel and ahead of the GPU (DataLoader num_workers, "
         "pin_memory=True), or make each sample cheaper to load.";
}

}  // namespace

LoaderWorkers FindLoaderWorkers(const trace::TraceModel& m) {
  LoaderWorkers w = LoaderWorkers::kUnknown;
  for (uint32_t i = 0; i < m.names.size(); ++i) {
    const std::string& name = m.names[i];
    if (name.find("_MultiProcessingDataLoaderIter") != std::string::npos)
      return LoaderWorkers::kSome;
    if (name.find("_SingleProcessDataLoaderIter") != std::string::npos) w = LoaderWorkers::kNone;
  }
  return w;
}

LoaderWait DescribeLoaderWait(const Overview& ov, LoaderWorkers workers) {
  LoaderWait out;
  std::vector<double> wait;
  double total = 0;
  for (const StepBreakdown& s : ov.steps) {
    wait.push_back(static_cast<double>(s.ns[kDataLoader]));
    total += wait.back();
  }
  out.advice = SteadyAdvice(workers == LoaderWorkers::kSome ? LoaderWorkers::kUnknown : workers);
  if (wait.size() < 3 || total <= 0) return out;
  std::vector<double> sorted = wait;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[sorted.size() / 2], mean = total / static_cast<double>(wait.size());
  double spike_ns = 0;
  size_t spikes = 0, largest = 0;
  for (size_t i = 0; i < wait.size(); ++i) {
    if (wait[i] > wait[largest]) largest = i;
    if (wait[i] > kSpikeFactor * median) spike_ns += wait[i], ++spikes;
  }
  if (spikes > 0 && spike_ns >= 0.5 * total) {
    out.pattern = LoaderWait::Pattern::kSpikes;
    out.detail = fmt::format(
        "the wait comes in spikes: {} of {} steps hold {:.0f} % of it (the largest {:.1f} ms in "
        "{}; the median step waits {:.1f} ms)",
        spikes, wait.size(), 100 * spike_ns / total, LoaderMs(wait[largest]),
        ov.steps[largest].step, LoaderMs(median));
    out.advice = SpikeAdvice(workers);
  } else if (median >= 0.5 * mean) {
    out.pattern = LoaderWait::Pattern::kSteady;
    out.detail = fmt::format("every step waits: {:.1f} ms at the median, {:.1f} ms on average",
                             LoaderMs(median), LoaderMs(mean));
    out.advice = SteadyAdvice(workers);
  }
  return out;
}

}  // namespace trainprof::analysis
