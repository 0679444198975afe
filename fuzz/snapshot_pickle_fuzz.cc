// libFuzzer target for the snapshot pickle reader: any bytes must give either a snapshot model
// whose stacks and frames agree with each other, or one clean error line; never a crash, a hang,
// a leak, or an allocation the size of a length the bytes only claim.
//   build/fuzz/fuzz/trainprof_fuzz_snapshot -max_total_time=60 fuzz/corpus/snapshot
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "snapshot/snapshot_analysis.h"
#include "snapshot/snapshot_model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto m = trainprof::snapshot::ReadSnapshotBytes(in, "fuzz.pickle");
  if (!m.ok()) {
    if (m.status().message().find('\n') != std::string::npos) std::abort();  // one line only
    return 0;
  }
  for (uint32_t f : m->stack_frames)
    if (f >= m->frames.size()) std::abort();
  for (const auto& [device, events] : m->traces)
    for (const auto& e : events)
      if (e.stack >= m->stacks()) std::abort();
  // The analysis must take whatever the reader accepted.
  auto devices = trainprof::snapshot::AnalyzeSnapshot(*m, {});
  for (const auto& d : devices)
    if (d.curve.size() != static_cast<size_t>(d.events)) std::abort();
  return 0;
}
