#include "base/diagnostics.h"

#include <array>

namespace trainprof::base {
namespace {

#define TRAINPROF_DIAGNOSTIC_KIND(id, name, severity, meaning) \
  DiagnosticKind{DiagnosticId::id, name, DataSeverity::severity, meaning},
constexpr std::array kKinds = {TRAINPROF_DIAGNOSTICS(TRAINPROF_DIAGNOSTIC_KIND)};
#undef TRAINPROF_DIAGNOSTIC_KIND

constexpr bool InIdOrder() {
  for (size_t i = 0; i < kKinds.size(); ++i)
    if (static_cast<size_t>(kKinds[i].id) != i) return false;
  return true;
}
static_assert(InIdOrder(), "KindOf indexes the list by id");

}  // namespace

const char* DataSeverityName(DataSeverity s) {
  switch (s) {
    case DataSeverity::kInfo:
      return "info";
    case DataSeverity::kDataLoss:
      return "data loss";
    case DataSeverity::kError:
      return "error";
  }
  return "error";
}

std::span<const DiagnosticKind> DiagnosticKinds() { return kKinds; }

const DiagnosticKind& KindOf(DiagnosticId id) {
  const auto i = static_cast<size_t>(id);
  return i < kKinds.size() ? kKinds[i] : kKinds.back();
}

std::optional<DiagnosticId> FindDiagnosticId(std::string_view name) {
  for (const DiagnosticKind& k : kKinds)
    if (k.name == name) return k.id;
  return std::nullopt;
}

Diagnostic DiagnosticFromName(std::string_view name, int64_t count, std::string message) {
  if (std::optional<DiagnosticId> id = FindDiagnosticId(name))
    return {*id, count, std::move(message)};
  return {DiagnosticId::kUnrecognized, count, std::string(name) + ": " + message};
}

}  // namespace trainprof::base
