// The stage of training a step belongs to.
#pragma once

namespace trainprof {

enum class Stage { kTrain, kValidation };
const char* StageName(Stage stage);  // "train", "validation"

}  // namespace trainprof
