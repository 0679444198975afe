#include "trace/inprocess/activity.h"

#include <iterator>

namespace trainprof::gpu {

const char* CopyKindName(CopyKind kind) {
  static constexpr const char* kNames[] = {"Unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                           "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP"};
  const auto i = static_cast<size_t>(kind);
  return i < std::size(kNames) ? kNames[i] : "Unknown";
}

std::unordered_map<uint32_t, uint64_t> ExternalIds(const ActivityData& a) {
  std::unordered_map<uint32_t, uint64_t> out;
  out.reserve(a.external.size());
  for (const ExternalCorrelation& x : a.external) out[x.correlation] = x.external_id;
  return out;
}

}  // namespace trainprof::gpu
