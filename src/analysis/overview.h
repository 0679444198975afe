// The TensorBoard profiler plugin's Overview: each step's wall time split into Kernel, Memcpy,
// Memset, Communication, Runtime, DataLoader, CPU Exec and Other. Categories are taken in that
// priority; each gets only the time no higher one claims, so they sum to the step time.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/steps.h"
#include "trace/trace_model.h"

namespace trainprof::analysis {

enum Category {
  kKernel,
  kMemcpy,
  kMemset,
  kCommunication,
  kRuntime,
  kDataLoader,
  kCpuExec,
  kOtherTime,
  kNumCategories
};
// "Kernel", "Memcpy", "Memset", "Communication", "Runtime", "DataLoader", "CPU Exec", "Other".
const char* CategoryTitle(int c);
// Machine keys: "kernel", "memcpy", ..., "cpu_exec", "other".
const char* CategoryKey(int c);

struct StepBreakdown {
  std::string step;  // "ProfilerStep#12", "all"
  int64_t total_ns = 0;
  std::array<int64_t, kNumCategories> ns{};
};

struct Overview {
  std::vector<StepBreakdown> steps;
  std::array<double, kNumCategories> avg_ns{};  // mean over steps
  double avg_total_ns = 0;
  bool any_communication = false;  // a communication kernel or collective op exists
};

// `dataloader_patterns`: names containing one of them are DataLoader too (IsDataLoaderName).
// `steps_from`: the step ranges beside ProfilerStep's (FindSteps), left out of CPU Exec as they.
Overview ComputeOverview(const trace::TraceModel& m, const StepsResult& steps,
                         const std::vector<std::string>& dataloader_patterns = {},
                         const std::vector<std::string>& steps_from = {});

}  // namespace trainprof::analysis
