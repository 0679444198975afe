// The cost of one TRAINPROF_SCOPE (begin + end) while recording and while the schedule skips,
// next to the clocks it could be built on, measured in the same run.
#include <benchmark/benchmark.h>
#include <x86intrin.h>

#include <chrono>

#include "record/recorder.h"
#include "trainprof/scope.h"

namespace {

using trainprof::record::BeginEpoch;
using trainprof::record::EndEpoch;
using trainprof::record::SetRecording;

// The plain pair of clock reads a naive timer needs.
void BM_Clock_SteadyClockPair(benchmark::State& state) {
  for (auto _ : state) {
    auto a = std::chrono::steady_clock::now();
    auto b = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(a);
    benchmark::DoNotOptimize(b);
  }
}
BENCHMARK(BM_Clock_SteadyClockPair);

void BM_Clock_RdtscPair(benchmark::State& state) {
  for (auto _ : state) {
    uint64_t a = __rdtsc();
    uint64_t b = __rdtsc();
    benchmark::DoNotOptimize(a);
    benchmark::DoNotOptimize(b);
  }
}
BENCHMARK(BM_Clock_RdtscPair);

// One scope while recording. The buffer is sized for every iteration, so nothing is dropped;
// the epoch is restarted outside the timed region when it fills.
void BM_Scope_Recording(benchmark::State& state) {
  constexpr int64_t kCapacity = 1 << 22;
  auto epoch = BeginEpoch(kCapacity);
  SetRecording(true);
  int64_t n = 0;
  for (auto _ : state) {
    TRAINPROF_SCOPE("bench");
    if (++n == kCapacity) {
      state.PauseTiming();
      EndEpoch(*epoch);
      epoch = BeginEpoch(kCapacity);
      SetRecording(true);
      n = 0;
      state.ResumeTiming();
    }
  }
  SetRecording(false);
  EndEpoch(*epoch);
}
BENCHMARK(BM_Scope_Recording);

// One scope while the schedule skips the step: a load and a branch.
void BM_Scope_Skipped(benchmark::State& state) {
  auto epoch = BeginEpoch(1024);
  SetRecording(false);
  for (auto _ : state) {
    TRAINPROF_SCOPE("bench");
  }
  EndEpoch(*epoch);
}
BENCHMARK(BM_Scope_Skipped);

}  // namespace
