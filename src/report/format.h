// How report values are written for humans (terminal, HTML) and for machines (CSV).
//
//   report::FormatHuman(Value(0.0123), Unit::kSeconds)   == "12.3 ms"
//   report::FormatHuman(Value(int64_t{12345}), Unit::kCount) == "12,345"
//   report::FormatMachine(Value(0.0123))                  == "0.0123"
#pragma once

#include <string>
#include <string_view>

#include "report/report.h"

namespace trainprof::report {

// Units chosen for humans: ns/µs/ms/s/min, B/KiB/MiB/GiB, thousands separators, 3-4
// significant digits. An empty value is "-".
std::string FormatHuman(const Value& v, Unit unit);
// Full precision, no units, no separators (shortest round-trip form for doubles); empty = "".
std::string FormatMachine(const Value& v);
// A finite double's shortest round-trip text (FormatMachine's), appended to `out`.
void AppendShortest(std::string& out, double d);
// Meta entry `key` of `r` as FormatHuman shows text; "" when the report has none.
std::string MetaText(const Report& r, std::string_view key);

}  // namespace trainprof::report
