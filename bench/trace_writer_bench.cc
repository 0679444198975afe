// trace.json writing throughput: complete events as the Session writes them, into a file.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>

#include "scratch_path.h"
#include "trace/chrome_trace_writer.h"

namespace {

using trainprof::trace::ChromeTraceWriter;
namespace bench = trainprof::bench;

bool Smoke() { return std::getenv("TRAINPROF_BENCH_SMOKE") != nullptr; }

void BM_TraceWriter_CompleteEventsToFile(benchmark::State& state) {
  const int64_t events = Smoke() ? 10'000 : 2'000'000;
  const bench::ScratchPath file("trace.json");
  const std::string& path = file.path();
  uint64_t bytes = 0;
  for (auto _ : state) {
    ChromeTraceWriter w;
    if (!w.Open(path).ok()) {
      state.SkipWithError("cannot open the trace file");
      return;
    }
    w.ProcessName(1, "bench");
    w.ThreadName(1, 7, "main");
    const auto names = {w.InternName("run_training_batch"), w.InternName("[Model].forward"),
                        w.InternName("[_TrainingEpochLoop].train_dataloader_next")};
    int64_t ts = 1'000'000;
    for (int64_t i = 0; i < events; ++i) {
      for (auto n : names) {
        w.Complete(n, trainprof::trace::kCatScope, ts, 12'345 + i % 1000, 1, 7, i / 10);
        ts += 13'577;
      }
    }
    if (!w.Close().ok()) {
      state.SkipWithError("cannot write the trace file");
      return;
    }
    bytes += w.bytes_written();
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.counters["events"] = static_cast<double>(events * 3);
}
BENCHMARK(BM_TraceWriter_CompleteEventsToFile)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
