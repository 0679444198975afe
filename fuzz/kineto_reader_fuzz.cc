// libFuzzer target for the Kineto reader: any bytes (JSON or gzip) must give either a model whose
// arrays agree with each other, or one clean error line; never a crash, a hang or a leak. Each
// input is read on the scalar scanning path and on the best SIMD path, which must agree.
//   build/fuzz/trainprof_fuzz_kineto -max_total_time=60 fuzz/corpus/kineto
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "trace/kineto/json_structural.h"
#include "trace/kineto/kineto_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace json = trainprof::trace::json;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  json::SetSimdLevel(json::SimdLevel::kScalar);
  auto scalar = trainprof::trace::ParseTrace(in, "fuzz.json");
  json::SetSimdLevel(json::SimdLevel::kAvx2);  // the best this CPU runs
  auto m = trainprof::trace::ParseTrace(in, "fuzz.json");
  if (scalar.ok() != m.ok()) std::abort();
  if (!m.ok() && scalar.status().message() != m.status().message()) std::abort();
  if (m.ok() && (scalar->size() != m->size() || scalar->ts_ns != m->ts_ns ||
                 scalar->dur_ns != m->dur_ns || scalar->name != m->name))
    std::abort();
  // Once more with a window of 4 KiB and units over it skipped unread (the 64-byte scan).
  trainprof::trace::ReadOptions tight;
  tight.chunk_bytes = 1;
  tight.max_unit_bytes = 1;
  json::SetSimdLevel(json::SimdLevel::kScalar);
  auto tight_scalar = trainprof::trace::ParseTrace(in, "fuzz.json", tight);
  json::SetSimdLevel(json::SimdLevel::kAvx2);
  auto tight_simd = trainprof::trace::ParseTrace(in, "fuzz.json", tight);
  if (tight_scalar.ok() != tight_simd.ok()) std::abort();
  if (tight_simd.ok() &&
      (tight_scalar->size() != tight_simd->size() || tight_scalar->name != tight_simd->name))
    std::abort();
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
