// The live view inside a running Session: the split from the loop's scopes, the GPUs from the
// sampler (the fake NVML), the verdict, and the world of ranks through a LiveChannel.
#include "session/live.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "report/live_snapshot.h"
#include "report/live_world.h"
#include "trainprof/scope.h"
#include "trainprof/session.h"
#include "util/golden.h"

namespace trainprof {
namespace {

using json = nlohmann::json;

void Sleep(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

// One step of 10 ms: data 4, forward 2 (a nested forward inside), backward 3, optimizer 1.
void LiveLoopStep(Session& s) {
  {
    TRAINPROF_SCOPE_KIND("[Data].next", ActionKind::kDataLoader);
    Sleep(4);
  }
  {
    TRAINPROF_SCOPE_KIND("[Model].forward", ActionKind::kForward);
    TRAINPROF_SCOPE_KIND("[Model].block.forward", ActionKind::kForward);
    Sleep(2);
  }
  {
    TRAINPROF_SCOPE_KIND("backward", ActionKind::kBackward);
    Sleep(3);
  }
  {
    TRAINPROF_SCOPE_KIND("optimizer.step", ActionKind::kOptimizer);
    Sleep(1);
  }
  s.Step();
}

#ifdef TRAINPROF_FAKE_NVML
// The split of the loop's time by its scopes' kinds, one GPU from NVML (the fake) with its
// figures, and the verdict they give: the loop waits for data 40 % of its time.
TEST(LiveView, SplitGpusAndVerdictWhileTheRunTrains) {
  void* nvml = dlopen(TRAINPROF_FAKE_NVML, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(nvml, nullptr) << dlerror();
  reinterpret_cast<void (*)(int)>(dlsym(nvml, "fake_nvml_reset"))(1);
  auto set =
      reinterpret_cast<void (*)(int, const char*, double)>(dlsym(nvml, "fake_nvml_set_value"));
  set(0, "mem_total", 80e9);
  set(0, "util", 95);
  set(0, "mem_used", 20e9);
  set(0, "power_mw", 350000);
  const std::string dir = testutil::FreshTempDir() + "/run";
  Options o;
  o.output.run_dir = dir;
  o.output.print = false;
  o.system.enabled = true;
  o.system.interval_s = 0.05;
  o.live.mode = "lines";
  o.live.interval_s = 0.2;
  setenv("TRAINPROF_NVML_LIBRARY", TRAINPROF_FAKE_NVML, 1);
  auto s = Session::Create(o);
  unsetenv("TRAINPROF_NVML_LIBRARY");
  ASSERT_TRUE(s.ok()) << s.status().message();
  testing::internal::CaptureStderr();
  (*s)->SetEpoch(2);
  for (int i = 0; i < 60; ++i) LiveLoopStep(**s);
  ASSERT_TRUE((*s)->Finish().ok());
  const std::string err = testing::internal::GetCapturedStderr();
  dlclose(nvml);
  std::ifstream in(dir + "/live.json");
  const json last = json::parse(in);
  ASSERT_TRUE(last.contains("split")) << last.dump();
  const json& p = last["split"];
  EXPECT_NEAR(p["data_wait"].get<double>(), 0.4, 0.1) << p.dump();
  EXPECT_NEAR(p["forward"].get<double>(), 0.2, 0.1) << p.dump();
  EXPECT_NEAR(p["backward"].get<double>(), 0.3, 0.1) << p.dump();
  EXPECT_GT(p["data_wait"].get<double>(), p["backward"].get<double>());
  EXPECT_GT(p["backward"].get<double>(), p["forward"].get<double>());
  EXPECT_EQ(last["epoch"].get<int64_t>(), 2);
  ASSERT_EQ(last["devices"].size(), 1u) << last.dump();
  EXPECT_DOUBLE_EQ(last["devices"][0]["util_pct"].get<double>(), 95);
  EXPECT_DOUBLE_EQ(last["devices"][0]["memory_bytes"].get<double>(), 20e9);
  EXPECT_DOUBLE_EQ(last["devices"][0]["power_w"].get<double>(), 350);
  EXPECT_EQ(last["verdict"], "input-bound");
  EXPECT_NE(err.find("| INPUT-BOUND: the loop waits for data"), std::string::npos) << err;
}
#endif

// A channel standing in for the ranks' store: rank 0 of two, rank 1's digest put by the test.
class TwoRanks : public session::LiveChannel {
 public:
  int64_t rank() const override { return 0; }
  int64_t world_size() const override { return 2; }
  void Put(const std::string& digest) override {
    std::lock_guard<std::mutex> lock(mu);
    mine = digest;
  }
  std::vector<std::string> GatherAll() override {
    std::lock_guard<std::mutex> lock(mu);
    return {mine, other};
  }
  std::mutex mu;
  std::string mine, other;
};

// Rank 0 shows the world: rank 1 waits in collectives 60 % of its loop, rank 0 (this one, no
// communication scopes: 0 %) is the late one; when rank 1 goes quiet it is named.
TEST(LiveView, RankZeroShowsTheWorld) {
  auto channel = std::make_shared<TwoRanks>();
  report::LiveSnapshot peer;
  peer.step = 7;
  peer.step_median_s = 0.010;
  peer.samples_per_s = 800;
  peer.split = report::LiveSplit{0, 0.1, 0.1, 0.1, 0.6, 0.1};
  const auto now_ms = [] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  channel->other = report::LiveRankDigest(peer, 1, now_ms());
  session::SetLiveChannel(channel);
  const std::string dir = testutil::FreshTempDir() + "/run";
  Options o;
  o.output.run_dir = dir;
  o.output.print = false;
  o.live.mode = "lines";
  o.live.interval_s = 0.1;
  testing::internal::CaptureStderr();
  auto s = Session::Create(o);
  ASSERT_TRUE(s.ok());
  (*s)->SetBatchSize(8);
  for (int i = 0; i < 30; ++i) LiveLoopStep(**s);
  channel->other = report::LiveRankDigest(peer, 1, now_ms() - 30'000);  // quiet for 30 s
  Sleep(300);
  ASSERT_TRUE((*s)->Finish().ok());
  session::SetLiveChannel(nullptr);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("world 2 of 2 ranks"), std::string::npos) << err;
  EXPECT_NE(err.find("slowest: rank 0 "), std::string::npos) << err;
  EXPECT_NE(err.find("(late in collectives), rank 1 10.0 ms (waiting in collectives)"),
            std::string::npos)
      << err;
  std::ifstream in(dir + "/live.json");
  const json last = json::parse(in);
  ASSERT_TRUE(last.contains("world"));
  EXPECT_EQ(last["world"]["reporting"].get<int64_t>(), 1);
  EXPECT_EQ(last["world"]["missing"][0], "rank 1: no snapshot for 30 s (last at step 7)");
  EXPECT_NE(channel->mine.find("\"rank\":0"), std::string::npos);
}

}  // namespace
}  // namespace trainprof
