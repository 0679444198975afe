#include "analysis/finding_rules.h"

#include <fmt/format.h>

#include <utility>

#include "analysis/findings.h"
#include "analysis/rank_analysis.h"
#include "analysis/ranks/distributed.h"

namespace trainprof::analysis {

namespace {

std::vector<FindingRule> MakeRules() {
  const std::string rec = "recommendations";
  return {
      {"dataloader",
       "Data loading stalls the step",
       "The share of the average step spent in the DataLoader's ranges (the plugin's DataLoader "
       "column), classed by its pattern over the steps: spikes or a steady wait.",
       fmt::format("DataLoader > {}% of the average step", kDataLoaderPct),
       rec,
       {{"overview/step_breakdown_average", "dataloader_pct"},
        {"overview/step_breakdown", "dataloader_s"}}},
      {"low_utilization",
       "The GPU is often idle",
       "The share of the step time in which the GPU runs a kernel (the plugin's GPU "
       "utilization).",
       fmt::format("GPU utilization < {}%", kLowUtilizationPct),
       rec,
       {{"gpu/gpu_summary", "utilization_pct"}, {"hta/idle_time_breakdown", ""}}},
      {"tensor_cores",
       "Matrix math does not use the matrix cores",
       "The GPU has matrix cores (Tensor Cores, AMD matrix cores), matmul or convolution "
       "operators ran, and none of their kernels ran on the matrix cores; or, on NVIDIA 8.0 "
       "and later, fp32 GEMM kernels on the CUDA cores (sgemm, ffma, simt) take a share of the "
       "kernel time that TF32 or bf16 would move to the Tensor Cores.",
       fmt::format("a GPU with matrix cores ran matmul/convolution operators and no kernel on "
                   "them, or fp32 SIMT GEMMs >= {}% of kernel time (compute capability >= 8.0)",
                   kSimtGemmPct),
       rec,
       {{"kernel_view/kernel_view_top", "tensor_cores"},
        {"operator_view/operator_view_top", "tc_eligible"}}},
      {"copies",
       "The step is spent copying memory",
       "The share of the average step in which memory copies run with no kernel beside them "
       "(the plugin's Memcpy column), with each direction's bytes, bandwidth and the share of "
       "copy time from or to pageable host memory.",
       fmt::format("Memcpy > {}% of the average step, and more than Kernel", kCopyPct),
       rec,
       {{"overview/step_breakdown_average", "memcpy_pct"},
        {"memcpy_bandwidth/memcpy_bandwidth", ""}}},
      {"communication",
       "Communication is not hidden behind computation",
       "The share of the average step in which communication kernels run with no computation "
       "kernel beside them.",
       fmt::format("exposed communication > {}% of the average step", kCommunicationPct),
       rec,
       {{"overview/step_breakdown_average", "communication_pct"},
        {"hta/comm_comp_overlap", "overlap_pct"}}},
      {"memory_near_limit",
       "Memory is near the device's limit",
       "The peak of memory allocated on a GPU ([memory] events), against the device's memory.",
       fmt::format("peak allocated > {}% of the device's memory", kMemoryNearLimitPct),
       rec,
       {{"memory/memory_peaks", ""}, {"gpu/gpu_summary", "memory_bytes"}}},
      {"host_wait",
       "The GPU waits for the host",
       "GPU idle time inside its busy span, and the part of it in which the host had not yet "
       "launched the next kernel, classed by what the host was doing then.",
       fmt::format("GPU idle > 10% of its busy span and host wait > {}% of the idle time",
                   kHostWaitShareOfIdlePct),
       rec,
       {{"idle_causes/idle_causes", "cause"},
        {"idle_causes/idle_gaps", "length_s"},
        {"hta/idle_time_breakdown", "host_wait_pct"}}},
      {"short_kernels",
       "Kernels shorter than their launches",
       "Kernels that run for less time than the runtime call that launched them: the host "
       "cannot keep the GPU fed.",
       fmt::format("short kernels > {}% of launches", kShortKernelPct),
       rec,
       {{"hta/kernel_launch_stats", "short_kernels"}}},
      {"launch_delay",
       "Launches wait long before the GPU starts them",
       "Kernels whose start lies more than the launch-delay cutoff after their launch call, "
       "while the GPU is idle part of its busy span.",
       fmt::format("launch-delay outliers > {}% of launches, and the GPU idle >= 10% of its span",
                   kLaunchDelayOutlierPct),
       rec,
       {{"hta/kernel_launch_stats", "launch_delay_outliers"}, {"hta/queue_length", ""}}},
      {"straggler",
       "One rank holds the others back",
       "The ranks' waits at matched collectives, attributed to the rank that arrived last.",
       "the other ranks wait >= 5% of the median step for one rank at collectives",
       rec,
       {{"distributed/wait_by_late_rank", ""}, {"distributed/distributed_step_breakdown", ""}}},
      {"waits_for_straggler",
       "Ranks wait for the straggler",
       "With a straggler named: the other ranks' communication not hidden behind computation, "
       "when their waits in collectives for it are at least the straggler threshold of their "
       "step; they wait, they are not slow, so no overlap advice and no saving of their own.",
       fmt::format("a straggler is named and the rank waits >= {}% of its step in collectives",
                   kStragglerWaitPct),
       rec,
       {{"distributed/wait_by_late_rank", ""}, {"distributed/distributed_step_breakdown", ""}}},
      {"rank_imbalance",
       "One rank's steps are longer",
       "With no matched collectives: the slowest rank's mean step against the median rank's.",
       fmt::format("a rank's mean step > {}% longer than the median rank's", kRankImbalancePct),
       rec,
       {{"overview/step_breakdown_average", "step_time_s"}}},
      {"graphs",
       "Work runs in CUDA/HIP graphs",
       "The share of the launched GPU time that runs in graph launches (information, not a "
       "problem).",
       "any graph launch",
       rec,
       {{"hta/kernel_launch_stats", ""}}},
      {"truncated",
       "The trace is cut short",
       "The trace file ends before its GPU events (Kineto stopped writing, or the file was "
       "cut): the figures cover only what was read.",
       "a truncated file",
       "data_quality",
       {{"data_quality/diagnostics", ""}}},
  };
}

}  // namespace

const std::vector<FindingRule>& FindingRules() {
  static const std::vector<FindingRule> rules = MakeRules();
  return rules;
}

const FindingRule* FindFindingRule(std::string_view key) {
  for (const FindingRule& r : FindingRules())
    if (r.key.key() == key) return &r;
  return nullptr;
}

}  // namespace trainprof::analysis
