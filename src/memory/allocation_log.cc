#include "memory/allocation_log.h"

namespace trainprof::memory {

const char* RoleName(Role r) {
  switch (r) {
    case Role::kParameter:
      return "parameter";
    case Role::kOptimizerState:
      return "optimizer state";
    case Role::kInput:
      return "input";
    case Role::kTemporary:
      return "temporary";
    case Role::kActivation:
      return "activation";
    case Role::kGradient:
      return "gradient";
    case Role::kAutogradDetail:
      return "autograd detail";
    case Role::kUnknown:
      break;
  }
  return "unknown";
}

}  // namespace trainprof::memory
