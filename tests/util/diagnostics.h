// Finding a diagnostic by its stable name (base/diagnostics.h) in a test.
//
//   EXPECT_EQ(testutil::FindDiagnostic(model.diagnostics, "truncated"), nullptr);
#pragma once

#include <string_view>
#include <vector>

#include "base/diagnostics.h"

namespace trainprof::testutil {

// The first of `ds` called `name`, or nullptr.
inline const base::Diagnostic* FindDiagnostic(const std::vector<base::Diagnostic>& ds,
                                              std::string_view name) {
  for (const base::Diagnostic& d : ds)
    if (d.name() == name) return &d;
  return nullptr;
}

}  // namespace trainprof::testutil
