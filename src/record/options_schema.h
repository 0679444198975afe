// The config keys of trainprof::Options (anemoi-training's diagnostics.benchmark_profiler keys,
// the schedule, outputs), registered on a base::ConfigSchema so YAML files, --set overrides,
// report.json's config section and docs/config.md all use one list.
//
//   Options o;
//   base::ConfigSchema schema;
//   AddOptionsKeys(schema, o);
//   TRAINPROF_RETURN_IF_ERROR(schema.ApplyFile("profiler.yaml"));
#pragma once

#include "base/config_schema.h"
#include "trainprof/options.h"

namespace trainprof {

// Registers every key of `o`, bound to its fields.
void AddOptionsKeys(base::ConfigSchema& schema, Options& o);
// Checks ranges and allowed values of every key, and the schedule. Errors name the key.
Status ValidateOptions(const Options& o);

}  // namespace trainprof
