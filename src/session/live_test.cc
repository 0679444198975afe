// The live view inside a running Session: the split from the loop's scopes, the GPUs from the
// sampler (the fake NVML), the verdict, and the world of ranks through a LiveChannel.
#include "session/live.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "live/snapshot.h"
#include "live/world.h"
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
  live::LiveSnapshot peer;
  peer.step = 7;
  peer.step_median_s = 0.010;
  peer.samples_per_s = 800;
  peer.split = live::LiveSplit{0, 0.1, 0.1, 0.1, 0.6, 0.1};
  const auto now_ms = [] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  channel->other = live::LiveRankDigest(peer, 1, now_ms());
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
  channel->other = live::LiveRankDigest(peer, 1, now_ms() - 30'000);  // quiet for 30 s
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

// An MLflow store that cannot be written: one line when the session starts, the loop trains on,
// and the view still writes live.json.
TEST(LiveView, ATrackerThatCannotBeWrittenIsOneLine) {
  const std::string tmp = testutil::FreshTempDir();
  std::ofstream(tmp + "/file") << "not a folder";
  Options o;
  o.output.run_dir = tmp + "/run";
  o.output.print = false;
  o.output.mlflow = tmp + "/file/mlruns";
  o.live.interval_s = 0.1;
  testing::internal::CaptureStderr();
  auto s = Session::Create(o);
  ASSERT_TRUE(s.ok());
  for (int i = 0; i < 20; ++i) LiveLoopStep(**s);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(err.find("trainprof: live view: "), 0u) << err;
  EXPECT_NE(err.find(tmp + "/file/mlruns"), std::string::npos) << err;
  EXPECT_NE(err.find("the run goes on without live MLflow metrics\n"), std::string::npos) << err;
  EXPECT_EQ(err.find('\n'), err.size() - 1) << err;  // one line
  EXPECT_EQ((*s)->profiler_step(), 20);
  (void)(*s)->Finish();  // the finished export fails on the same store, and says so
  EXPECT_TRUE(std::filesystem::exists(tmp + "/run/live.json"));
}

// One HTTP GET on loopback, the whole answer ("" when nothing answers).
std::string HttpGet(int port, const std::string& path) {
  return testutil::HttpExchange(port, "GET " + path + " HTTP/1.0\r\nHost: localhost\r\n\r\n");
}

// live.port serves the page and the latest snapshot from memory while the loop runs (live.mode
// off: the page alone, nothing printed); a second session asking for the same port says so in
// one line and trains on.
TEST(LiveView, ThePageServesTheSnapshotWhileTheRunTrains) {
  const int port = testutil::FreeTcpPort();
  auto options = [&](const std::string& dir) {
    Options o;
    o.output.run_dir = dir;
    o.output.print = false;
    o.live.port = port;
    o.live.interval_s = 0.1;
    return o;
  };
  const std::string tmp = testutil::FreshTempDir();
  testing::internal::CaptureStderr();
  auto s = Session::Create(options(tmp + "/a"));
  ASSERT_TRUE(s.ok());
  for (int i = 0; i < 30; ++i) LiveLoopStep(**s);
  const std::string json_answer = HttpGet(port, "/live.json");
  const std::string page = HttpGet(port, "/");
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(err, "trainprof: live page at http://127.0.0.1:" + std::to_string(port) + "/\n");
  EXPECT_NE(json_answer.find("200 OK"), std::string::npos) << json_answer;
  const json snap = json::parse(json_answer.substr(json_answer.find("\r\n\r\n") + 4));
  EXPECT_GT(snap["step"].get<int64_t>(), 0);
  EXPECT_TRUE(snap.contains("split"));
  EXPECT_NE(page.find("<title>trainprof live</title>"), std::string::npos);

  ASSERT_TRUE((*s)->Finish().ok());
  s->reset();

  const int held = socket(AF_INET, SOCK_STREAM, 0);  // another program has the port
  int yes = 1;  // past the first server's connections in TIME_WAIT
  setsockopt(held, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(held, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(listen(held, 1), 0);
  testing::internal::CaptureStderr();
  auto second = Session::Create(options(tmp + "/b"));
  ASSERT_TRUE(second.ok());
  for (int i = 0; i < 3; ++i) LiveLoopStep(**second);
  EXPECT_TRUE((*second)->Finish().ok());
  err = testing::internal::GetCapturedStderr();
  close(held);
  EXPECT_EQ(
      err, "trainprof: live view: cannot serve the live page on 127.0.0.1:" + std::to_string(port) +
               ": the port is in use, or the address is not this machine's; the run goes "
               "on without the page\n");
  EXPECT_TRUE(std::filesystem::exists(tmp + "/b/report.json"));
}

}  // namespace
}  // namespace trainprof
