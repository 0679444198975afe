// libFuzzer target for the Kineto reader: any bytes (JSON or gzip) must give either a model whose
// arrays agree with each other, or one clean error line; never a crash, a hang or a leak.
//   build/fuzz/trainprof_fuzz_kineto -max_total_time=60 fuzz/corpus/kineto
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "trace/kineto_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto m = trainprof::trace::ParseTrace(in, "fuzz.json");
  if (!m.ok()) {
    if (m.status().message().find('\n') != std::string::npos) std::abort();  // one line only
    return 0;
  }
  size_t n = m->size();
  if (m->dur_ns.size() != n || m->name.size() != n || m->launcher.size() != n ||
      m->track.size() != n || m->correlation.size() != n)
    std::abort();
  for (size_t i = 0; i < n; ++i) {
    if (m->dur_ns[i] < 0 || m->name[i] >= m->names.size() || m->track[i] >= m->tracks.size())
      std::abort();
    int32_t l = m->launcher[i];
    if (l >= 0 && (static_cast<size_t>(l) >= n || m->correlation[l] != m->correlation[i]))
      std::abort();
  }
  return 0;
}
