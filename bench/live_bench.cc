// What the live view (live.mode) adds to Session::Step(): one Step() with the view off and on,
// in the same run. The view's thread prints a line on stderr each second while it runs.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <string>

#include "trainprof/session.h"

namespace {

void BM_Session_Step(benchmark::State& state) {
  trainprof::Options o;
  o.output.run_dir =
      "/tmp/trainprof_live_bench_" + std::to_string(getpid()) + (state.range(0) ? "_on" : "_off");
  o.output.overwrite = true;
  o.output.print = false;
  o.output.trace = false;
  o.output.csv = false;
  o.live.mode = state.range(0) ? "lines" : "off";
  auto s = trainprof::Session::Create(o);
  if (!s.ok()) {
    state.SkipWithError(s.status().message().c_str());
    return;
  }
  for (auto _ : state) (*s)->Step();
  (void)(*s)->Finish();  // after the timed loop
}
BENCHMARK(BM_Session_Step)->Arg(0)->Arg(1)->ArgName("live");

}  // namespace
