// Memory by role on the allocation log: what each block is (weights, gradients, optimizer state,
// activations, temporaries), inferred from its lifetime against the phases of the training step
// and from where it was made, never from function names alone:
//   * made before the history began, or while a module was built or moved -> parameter; but
//     when the history has optimizer steps that make no state (it began after the first one),
//     what was resident before it also holds that state -> unknown, said so;
//   * made in an optimizer step and alive after it -> optimizer state;
//   * made on autograd's backward thread and alive after the backward -> gradient;
//   * made in a forward and alive into the backward that follows -> activation; alive after a
//     forward that no backward follows -> activation too (saved for a backward, or outputs);
//   * made and freed inside one phase -> temporary;
//   * a library's workspace (cuBLAS), and all else -> unknown.
// A source that knows a block's role exactly sets it with the rule kExact; inference keeps it.
//
//   std::vector<PhaseSpan> phases = StepPhases(log, device, annotated);
//   InferRoles(log, device, phases);
//   RoleBytes at_peak = RolesAt(log, device, peak_seq);
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "memory/allocation_log.h"

namespace trainprof::memory {

enum class Phase : uint8_t { kForward, kBackward, kOptimizer, kZeroGrad };
const char* PhaseName(Phase p);  // "forward", "backward", "optimizer", "zero_grad"

struct PhaseSpan {  // [start, end] in the log's clock
  Phase phase = Phase::kForward;
  int64_t start = 0, end = 0;
};

enum Rule : uint8_t {
  kNoRule,
  kExact,  // the source knew it (tensor identity in the training loop)
  kBeforeHistory,
  kBeforeWithState,  // before a history that began after the optimizer made its state
  kModelBuild,
  kOptimizerKept,
  kGradientKept,
  kActivationKept,
  kKeptPastForward,
  kTemporaryInPhase,
  kLibraryWorkspace,
  kAllocatorRounding,  // set by a source: block sizes against the sizes requested
  kTorchCategory,      // set by a source: PyTorch's memory profiler's own category
  kRules,
};
const char* RuleText(uint8_t rule);  // "made before the recorded history began", ...

// The phases of `device`'s history. Where a source annotated backward spans, the annotated spans
// (any order). Else the optimizer and zero_grad spans annotated (or, with none, the runs of
// blocks made in an optimizer's step), then per span between two optimizer steps a backward from
// the first to the last block made on autograd's thread, and a forward from the span's start (or
// zero_grad's end) to the backward's start. With neither, the whole history is one forward.
std::vector<PhaseSpan> StepPhases(const AllocationLog& log, int64_t device,
                                  std::vector<PhaseSpan> annotated);

// PyTorch's optimizer ranges by name: "Optimizer.step#AdamW.step" -> kOptimizer,
// "Optimizer.zero_grad#…" -> kZeroGrad; nullopt for any other name.
std::optional<Phase> OptimizerPhaseOf(std::string_view name);

// Sets the role and rule of `device`'s blocks that no source decided (rule kNoRule).
void InferRoles(AllocationLog& log, int64_t device, const std::vector<PhaseSpan>& phases);

using RoleBytes = std::array<int64_t, kRoles>;  // by Role

// Bytes live on `device` after its event `seq` by role; `keep` as for LiveAt.
RoleBytes RolesAt(const AllocationLog& log, int64_t device, int64_t seq);

// Bytes by role that each rule decided among `device`'s blocks live after event `seq`.
std::vector<std::pair<uint8_t, int64_t>> RulesAt(const AllocationLog& log, int64_t device,
                                                 int64_t seq);

struct RolePoint {
  int64_t time = 0;
  RoleBytes bytes{};
};

// Bytes by role over `device`'s history at about `points` evenly spaced events and at `peak_seq`
// (each point the state after its event), in event order.
std::vector<RolePoint> RoleTimeline(const AllocationLog& log, int64_t device, int64_t peak_seq,
                                    size_t points);

}  // namespace trainprof::memory
