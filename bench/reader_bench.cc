// The stages of `trainprof analyze` on one trace, each alone: inflating, parsing (gzip or plain,
// one thread or parts on two), and the analyses of the parsed model. The trace is the shared
// trace_diff_control (35 MB of JSON) or, with no ../shared, the project's own small one;
// TRAINPROF_BENCH_TRACE=PATH picks another .json.gz.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "analysis/analyze.h"
#include "scratch_path.h"
#include "trace/byte_source.h"
#include "trace/kineto/json_structural.h"
#include "trace/kineto/kineto_reader.h"

namespace {

using namespace trainprof;

std::string TracePath() {
  if (const char* p = std::getenv("TRAINPROF_BENCH_TRACE"); p != nullptr && *p != '\0') return p;
  std::string shared = std::string(TRAINPROF_SHARED_DIR) +
                       (std::getenv("TRAINPROF_BENCH_SMOKE") != nullptr
                            ? "/data/traces/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"
                            : "/data/traces/trace_diff_control/control.json.gz");
  std::error_code ec;
  if (std::filesystem::exists(shared, ec)) return shared;
  return std::string(TRAINPROF_SOURCE_DIR) + "/fuzz/corpus/kineto/kineto_small.json.gz";
}

// The trace's JSON, inflated once into a temporary file, removed when the program exits.
const std::string& PlainCopy() {
  static const bench::ScratchPath file("plain.json");
  static const bool written = [] {
    auto src = trace::OpenTraceBytes(TracePath());
    std::ofstream f(file.path(), std::ios::binary);
    std::string buf(size_t{1} << 20, '\0');
    for (;;) {
      auto n = (*src)->Read(buf.data(), buf.size());
      if (!n.ok() || *n == 0) break;
      f.write(buf.data(), static_cast<std::streamsize>(*n));
    }
    return true;
  }();
  (void)written;
  return file.path();
}

void BM_Reader_Inflate(benchmark::State& state) {
  std::string buf(size_t{1} << 20, '\0');
  int64_t bytes = 0;
  for (auto _ : state) {
    auto src = trace::OpenTraceBytes(TracePath());
    for (;;) {
      auto n = (*src)->Read(buf.data(), buf.size());
      if (!n.ok() || *n == 0) break;
      bytes += static_cast<int64_t>(*n);
    }
  }
  state.SetBytesProcessed(bytes);
}
BENCHMARK(BM_Reader_Inflate)->Unit(benchmark::kMillisecond)->UseRealTime();

// range(0): 1 gzip, 0 plain; range(1): threads (parts of the file).
void BM_Reader_Parse(benchmark::State& state) {
  const std::string path = state.range(0) ? TracePath() : PlainCopy();
  trace::ReadOptions o;
  o.threads = static_cast<int>(state.range(1));
  int64_t bytes = 0;
  for (auto _ : state) {
    auto m = trace::ReadTraceFile(path, o);
    if (!m.ok()) {
      state.SkipWithError(m.status().message().c_str());
      return;
    }
    bytes += m->json_bytes;
    state.counters["parts"] = m->read_segments;
  }
  state.SetBytesProcessed(bytes);
}
BENCHMARK(BM_Reader_Parse)
    ->ArgNames({"gzip", "threads"})
    ->Args({1, 1})
    ->Args({1, 2})
    ->Args({0, 1})
    ->Args({0, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The JSON of the trace, held in memory once.
const std::string& PlainBytes() {
  static const std::string bytes = [] {
    std::ifstream f(PlainCopy(), std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }();
  return bytes;
}

// Structural scanning alone (json_structural.h) over the trace's bytes in memory, on each path:
// range(0) 0 scalar, 1 SSE4.2, 2 AVX2 (skipped where the CPU lacks it). "Index" writes every
// structural character's and string's offset (simdjson's stage 1); "UnitEnds" walks the event
// list one event at a time as the reader skips values it does not keep.
void BM_Scanner_Index(benchmark::State& state) {
  const auto level = static_cast<trace::json::SimdLevel>(state.range(0));
  if (level > trace::json::BestSimdLevel()) {
    state.SkipWithError("this CPU lacks the instructions");
    return;
  }
  trace::json::SetSimdLevel(level);
  const std::string& b = PlainBytes();
  std::vector<uint32_t> out(b.size() + 64);
  size_t found = 0;
  for (auto _ : state) {
    trace::json::BlockCarry carry;
    found = trace::json::IndexStructurals(b.data(), b.size(), &carry, out.data());
    benchmark::DoNotOptimize(out.data());
  }
  state.SetLabel(trace::json::SimdLevelName(level));
  state.counters["structurals"] = static_cast<double>(found);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * b.size()));
  trace::json::SetSimdLevel(trace::json::SimdLevel::kAvx2);
}
BENCHMARK(BM_Scanner_Index)->DenseRange(0, 2)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Scanner_UnitEnds(benchmark::State& state) {
  const auto level = static_cast<trace::json::SimdLevel>(state.range(0));
  if (level > trace::json::BestSimdLevel()) {
    state.SkipWithError("this CPU lacks the instructions");
    return;
  }
  trace::json::SetSimdLevel(level);
  const std::string& b = PlainBytes();
  const char* first = b.data() + b.find('{', b.find("\"traceEvents\""));
  int64_t units = 0;
  for (auto _ : state) {
    units = 0;
    for (const char* p = first; p < b.data() + b.size(); ++units) {
      int64_t depth = 0;
      trace::json::BlockCarry carry;
      p = trace::json::FindUnitEnd(p, b.data() + b.size(), &depth, &carry) + 1;
    }
  }
  state.SetLabel(trace::json::SimdLevelName(level));
  state.counters["units"] = static_cast<double>(units);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * (b.data() + b.size() - first)));
  trace::json::SetSimdLevel(trace::json::SimdLevel::kAvx2);
}
BENCHMARK(BM_Scanner_UnitEnds)->DenseRange(0, 2)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Analyze_OneRank(benchmark::State& state) {
  auto m = trace::ReadTraceFile(PlainCopy(), {});
  if (!m.ok()) {
    state.SkipWithError(m.status().message().c_str());
    return;
  }
  std::vector<trace::TraceModel> models;
  models.push_back(std::move(*m));
  analysis::AnalyzeOptions o;
  o.threads = static_cast<int>(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(analysis::AnalyzeAll(models, o));
}
BENCHMARK(BM_Analyze_OneRank)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
