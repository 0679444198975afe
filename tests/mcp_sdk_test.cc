// `trainprof mcp` driven by the official MCP TypeScript SDK's client (npm
// @modelcontextprotocol/sdk, installed into the build folder on first use): the client script
// tests/mcp/sdk_client.cjs connects over stdio, lists the tools, calls each on every input kind
// and checks the answers against the CLI's report.json of the same input, and the errors.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "util/golden.h"
#include "util/process.h"
#include "util/trace_gen.h"

namespace {

namespace testutil = trainprof::testutil;
namespace fs = std::filesystem;
using nlohmann::json;
using testutil::RunProcess;

const std::string kCli = TRAINPROF_CLI;
const std::string kSource = TRAINPROF_SOURCE_DIR;
const std::string kShared = TRAINPROF_SHARED_DIR;
const std::string kSdkDir = TRAINPROF_MCP_SDK_DIR;
constexpr const char* kSdk = "@modelcontextprotocol/sdk@1.32.2";

// The SDK in the build folder: "" when it is there, else why it cannot be.
std::string InstallSdk() {
  if (fs::exists(kSdkDir + "/node_modules/@modelcontextprotocol/sdk/package.json")) return "";
  const std::string npm = testutil::FindOnPath("npm");
  if (npm.empty()) return "npm is not installed";
  auto r = RunProcess({testutil::FindOnPath("timeout"), "300", npm, "install", "--prefix", kSdkDir,
                       kSdk, "--no-audit", "--no-fund", "--loglevel=error"});
  if (r.exit_code != 0) return "npm could not install " + std::string(kSdk) + ": " + r.err;
  return "";
}

// Rank `rank` of a two-rank job whose steps wait 40 % in the DataLoader.
void WriteRank(const std::string& dir, int64_t rank) {
  testutil::GenTrace t;
  t.world_size = 2;
  testutil::GenStep s{.host_dur_ns = 1'000'000, .data_loader_ns = 400'000};
  s.gpu_ops.push_back({.name = "ampere_sgemm_64x64_nn",
                       .start_ns = 450'000,
                       .dur_ns = 400'000,
                       .launch_delay_ns = 10'000});
  t.steps = {s, s, s, s};
  auto g = testutil::GenerateKinetoTrace(t, {.rank = rank, .skew_ns = rank * 1000});
  ASSERT_TRUE(g.ok()) << g.status().message();
  fs::create_directories(dir);
  std::ofstream(fmt::format("{}/rank{}.pt.trace.json", dir, rank)) << g->json;
}

// The CLI's report.json of `path`, written to `out`.
void CliReport(const std::string& path, const std::string& out) {
  auto r = RunProcess({kCli, "analyze", path, "--format", "json", "--db", "off"});
  ASSERT_EQ(r.exit_code, 0) << path << ": " << r.err;
  std::ofstream(out) << r.out;
}

TEST(McpSdk, TheOfficialClientGetsTheCliAnswersAndTheErrors) {
  const std::string node = testutil::FindOnPath("node");
  if (node.empty()) GTEST_SKIP() << "node is not installed: the MCP SDK client needs it";
  if (std::string why = InstallSdk(); !why.empty()) GTEST_SKIP() << why;
  const std::string root = testutil::FreshTempDir();
  json cfg = {{"cli", kCli}, {"root", root}, {"cases", json::array()}};
  WriteRank(root + "/ranks", 0);
  WriteRank(root + "/ranks", 1);
  fs::create_directories(root + "/one");
  fs::copy_file(kSource + "/tests/data/traces/small_gpu/rank0.json", root + "/one/rank0.json");
  fs::copy_file(kSource + "/tests/data/snapshots/torch2.11_h200_transformer.pickle",
                root + "/snapshot.pickle");
  std::vector<std::pair<std::string, std::string>> cases = {
      {"folder of ranks", root + "/ranks"},
      {"kineto trace", root + "/one/rank0.json"},
      {"memory snapshot", root + "/snapshot.pickle"}};
  // The shared traces, when they are beside the checkout: a real Kineto trace and an nsys export.
  for (const std::string& p : {kShared + "/data/traces/trace_diff_control/control.json.gz",
                               kShared + "/data/nsys/mfu_2gpu_before.sqlite"}) {
    if (!fs::exists(p)) continue;
    fs::create_directories(root + "/shared");
    const std::string copy = root + "/shared/" + fs::path(p).filename().string();
    fs::copy_file(p, copy);
    cases.push_back({fs::path(p).extension() == ".sqlite" ? "nsys export" : "shared kineto", copy});
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string expected = fmt::format("{}/expected{}.json", root, i);
    CliReport(cases[i].second, expected);
    cfg["cases"].push_back(
        {{"name", cases[i].first}, {"path", cases[i].second}, {"report", expected}});
  }
  {
    std::ifstream src(root + "/one/rank0.json");
    const std::string text((std::istreambuf_iterator<char>(src)), {});
    std::ofstream(root + "/cut.json") << text.substr(0, text.size() / 2);
  }
  // Two analyze runs in a history for `runs`.
  const std::string db = root + "/runs/trainprof.db";
  for (int i = 0; i < 2; ++i) {
    auto r =
        RunProcess({kCli, "analyze", root + "/ranks", "-o", root + "/runs", "--db", db, "--quiet"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  cfg["db"] = db;
  const std::string cfg_path = root + "/config.json";
  std::ofstream(cfg_path) << cfg.dump(1);
  auto r = RunProcess({testutil::FindOnPath("env"), "NODE_PATH=" + kSdkDir + "/node_modules", node,
                       kSource + "/tests/mcp/sdk_client.cjs", cfg_path});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  std::cout << r.out;  // what the client checked, input by input
  EXPECT_NE(r.out.find("checks passed"), std::string::npos) << r.out;
}

}  // namespace
