// The config keys of trainprof::Options (anemoi-training's diagnostics.benchmark_profiler keys,
// the schedule, outputs), registered on a base::ConfigSchema so YAML files, --set overrides,
// report.json's config section and docs/config.md all use one list.
//
//   Options o;
//   base::ConfigSchema schema;
//   AddOptionsKeys(schema, o);
//   TRAINPROF_RETURN_IF_ERROR(schema.ApplyFile("profiler.yaml"));
#pragma once

#include <string>
#include <vector>

#include "base/config_schema.h"
#include "trainprof/options.h"

namespace trainprof {

// Registers every key of `o`, bound to its fields.
void AddOptionsKeys(base::ConfigSchema& schema, Options& o);
// Checks ranges and allowed values of every key, and the schedule. Errors name the key.
Status ValidateOptions(const Options& o);
// Applies a YAML file (none when `config_path` is empty), then "key=value" overrides as --set
// takes them, to `o` (its current values are the defaults), and validates the result. Errors
// name the file, line and column or the override, and the nearest valid key.
Status ApplyOptionsConfig(Options& o, const std::string& config_path,
                          const std::vector<std::string>& overrides);

}  // namespace trainprof
