// The cost of one system sample on this machine (the sampler's whole read of /proc, /sys and
// statvfs, without NVML), and of reading each /proc file it uses, to see where the time goes.
#include <benchmark/benchmark.h>

#include <string>

#include "system/sampler.h"
#include "system/sources.h"

namespace {

using trainprof::system::SamplerOptions;
using trainprof::system::SystemSampler;

void BM_System_Sample(benchmark::State& state) {
  SamplerOptions o;
  o.nvml_library = "";  // host figures only: NVML's own time depends on the driver
  o.disk_path = ".";
  auto sampler = SystemSampler::Create(o);
  sampler->SampleOnce();  // baseline
  int64_t n = 0;
  for (auto _ : state) {
    sampler->SampleOnce();
    if (++n == 4096) {  // keep the series (memory) bounded in long runs
      state.PauseTiming();
      (void)sampler->TakeData();
      state.ResumeTiming();
      n = 0;
    }
  }
}
BENCHMARK(BM_System_Sample)->Unit(benchmark::kMicrosecond);

void BM_System_ReadProcFile(benchmark::State& state, const char* path) {
  std::string buf;
  for (auto _ : state) {
    benchmark::DoNotOptimize(trainprof::system::ReadSmallFile(path, &buf));
  }
  state.SetLabel(path);
}
BENCHMARK_CAPTURE(BM_System_ReadProcFile, stat, "/proc/stat")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_System_ReadProcFile, meminfo, "/proc/meminfo")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_System_ReadProcFile, self_stat, "/proc/self/stat")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_System_ReadProcFile, net_dev, "/proc/net/dev")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_System_ReadProcFile, diskstats, "/proc/diskstats")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_System_ReadProcFile, loadavg, "/proc/loadavg")->Unit(benchmark::kMicrosecond);

}  // namespace
