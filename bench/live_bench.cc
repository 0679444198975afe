// What the live view (live.mode) adds to Session::Step(): one Step() with the view off and on,
// in the same run (the view's thread prints a line on stderr each second while it runs), and
// the view's own work for one snapshot.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "live/snapshot.h"
#include "live/world.h"
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

// The live thread's work for one snapshot, off the training thread: the step figures over a
// full window of 100 steps, the verdict, live.json's text and the terminal view's rows, with
// one GPU and a world of 8 ranks. A tick a second costs this share of one core.
void BM_LiveSnapshot_Build(benchmark::State& state) {
  using namespace trainprof::live;
  std::vector<int64_t> bounds, batches;
  for (int64_t i = 0; i <= 100; ++i) {
    bounds.push_back(i * 40'000'000 + (i % 7) * 1'000'000);
    batches.push_back(64);
  }
  std::vector<std::string> digests;
  for (int r = 0; r < 8; ++r) {
    LiveSnapshot peer = BuildLiveSnapshot(100, bounds, batches, bounds.back(), 64);
    peer.split = LiveSplit{0.1, 0.2, 0.3, 0.1, 0.25, 0.05};
    digests.push_back(LiveRankDigest(peer, r, 1000));
  }
  for (auto _ : state) {
    LiveSnapshot s = BuildLiveSnapshot(100, bounds, batches, bounds.back(), 64);
    s.split = LiveSplit{0.1, 0.2, 0.3, 0.1, 0.25, 0.05};
    s.devices = {{0, 93.0, 12e9, 15.0, 410.0}};
    AddLiveVerdict(s);
    s.world = BuildLiveWorld(digests, 8, 1500, 1.0);
    benchmark::DoNotOptimize(LiveJson(s));
    benchmark::DoNotOptimize(LiveView(s, 120));
  }
}
BENCHMARK(BM_LiveSnapshot_Build);

}  // namespace
