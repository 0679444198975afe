// `trainprof diff A B`: what changed between two runs (HTA's trace diff): average step time and
// each overview category, and the CPU operators and GPU kernels whose time per step was added,
// removed, increased or decreased most. Times are per analysed step, so runs with different
// step counts compare fairly; several ranks are averaged.
#pragma once

#include <string>
#include <vector>

#include "analysis/rank_analysis.h"
#include "report/report.h"
#include "trace/trace_model.h"

namespace trainprof::analysis {

struct DiffSide {
  std::string label;  // the path as given
  const std::vector<trace::TraceModel>* models = nullptr;
  const std::vector<RankAnalysis>* analyses = nullptr;
};

report::Report BuildDiffReport(const DiffSide& a, const DiffSide& b, int top_n);

// diff_by_device.cc: the GPU a side ran on, "NVIDIA H100 80GB HBM3 (sm_90)" ("" when no trace
// names it); and the tables that compare GPU work across devices: operators by GPU time and
// TFLOP/s, categories, and (for two devices) kernel families instead of kernel names.
std::string DeviceOf(const DiffSide& s);
void AddGpuWorkDiff(report::Section& s, const DiffSide& a, const DiffSide& b, int top_n,
                    bool other_device);

// diff_by_role.cc: memory by role at each side's peak (the Memory view's roles), the roles that
// moved as a finding; a line when only one side has memory events, nothing when neither has.
void AddRoleDiff(report::Section& s, const DiffSide& a, const DiffSide& b);

// Every rank of the side has no ProfilerStep: its "step" is its capture window.
bool WindowsOnly(const DiffSide& s);

// A step-time change within this many percent is no verdict: "no clear change".
inline constexpr double kDiffNoisePct = 5;
// diff_verdict.cc: the finding on the average step times `sa` and `sb` (ns), after the warnings
// that come first: an empty side (then nothing else), different GPU or rank counts, capture
// windows without steps (then the work is compared, not the windows).
void AddStepVerdict(report::Section& s, const DiffSide& a, const DiffSide& b, double sa, double sb,
                    bool other_model);

}  // namespace trainprof::analysis
