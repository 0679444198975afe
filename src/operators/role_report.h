// Memory by role measured in the training loop (python/trainprof/_torch_roles.py): exact bytes
// of parameters, gradients, optimizer state, activations and input by tensor identity, at the
// phase boundaries of the recorded steps, with the allocator's total where there is one (CUDA).
//
//   std::vector<torchlib::RoleSample> samples = ...;  // one per phase boundary
//   torchlib::AddRoleSection(samples, modules, report);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "report/report.h"
#include "session/live.h"

namespace trainprof::torchlib {

// One moment of a step. A figure that could not be measured there is absent, never 0: the
// activations and the input only at the end of the forward, the optimizer state only with an
// optimizer, the allocator's total only on one CUDA device.
struct RoleSample {
  int64_t step = 0;
  // "end of forward", "start of optimizer.step", "end of optimizer.step", "end of step"
  std::string at;
  int64_t parameter = 0, gradient = 0;
  std::optional<int64_t> optimizer_state, activation, input, allocated;
};

// Parameters, gradients and optimizer state of the parameters a module owns.
struct RoleModule {
  std::string module;
  int64_t parameter = 0, gradient = 0, optimizer_state = 0;
};

// What else the loop knew, for the answers: the model's forward ran under autocast to
// `autocast_dtype` ("bfloat16"; "" none seen) while `fp32_weight_bytes` of its parameters were
// float32; the modules that saved most for backward in one step, largest first.
struct RoleContext {
  std::string autocast_dtype;
  int64_t fp32_weight_bytes = 0;
  std::vector<std::pair<std::string, int64_t>> activation_modules;
};

// A sample's figures for the live view (session::SetLiveRoles): the roles it measured, and the
// allocator's total less them as "other" where there is a total.
session::LiveRoleFigures LiveFiguresOf(const RoleSample& r);

// The "memory_by_role" section: the largest figure of each role as metrics, every sample as a
// series, the modules (the top 20 and the rest), and the answers a user acts on.
void AddRoleSection(const std::vector<RoleSample>& samples, std::vector<RoleModule> modules,
                    report::Report& report, const RoleContext& context = {});

}  // namespace trainprof::torchlib
