// A report Value as report.json writes it (json.h): int64 and finite doubles as numbers, text,
// bool, and null for an empty value or a NaN. For the code that builds JSON of report parts
// beside report.json itself (`trainprof mcp`'s answers).
//
//   nlohmann::ordered_json j = report::ValueToJson(row[c]);
#pragma once

#include <nlohmann/json.hpp>

#include "report/report.h"

namespace trainprof::report {

nlohmann::ordered_json ValueToJson(const Value& v);

}  // namespace trainprof::report
