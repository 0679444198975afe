// The MCP server in process: messages in, messages out, on the project's own small trace.
#include "mcp/server.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "analysis/run/driver.h"
#include "report/json.h"
#include "util/golden.h"

namespace trainprof::mcp {
namespace {

namespace fs = std::filesystem;

const std::string kTraceDir = std::string(TRAINPROF_SOURCE_DIR) + "/tests/data/traces/small_gpu";

// Serves `lines` (one message each) with `root` as the only root; the replies by id (as dumped
// text), and the notifications and id-less replies in order under "".
std::map<std::string, std::vector<Json>> Exchange(const std::vector<Json>& lines,
                                                  const std::string& root,
                                                  int roots_wait_ms = 5000) {
  std::stringstream in, out;
  for (const Json& m : lines) in << Line(m) << "\n";
  ServerOptions o;
  o.roots = {root};
  o.roots_wait_ms = roots_wait_ms;
  EXPECT_EQ(Serve(o, in, out), 0);
  std::map<std::string, std::vector<Json>> by_id;
  std::string line;
  while (std::getline(out, line)) {
    Json m = Json::parse(line);
    by_id[m.contains("id") && !m["id"].is_null() ? Line(m["id"]) : ""].push_back(m);
  }
  return by_id;
}

Json Call(int id, const std::string& tool, Json args) {
  return Request(id, "tools/call", {{"name", tool}, {"arguments", std::move(args)}});
}

Json Init() {
  return Request(0, "initialize",
                 {{"protocolVersion", "2025-06-18"},
                  {"capabilities", Json::object()},
                  {"clientInfo", {{"name", "test"}, {"version", "1"}}}});
}

TEST(McpServer, InitializeAgreesOnAVersionAndListsTheTools) {
  auto r = Exchange({Init(), Request(1, "tools/list", Json::object()),
                     Request(2, "initialize", {{"protocolVersion", "1999-01-01"}})},
                    kTraceDir);
  EXPECT_EQ(r["0"][0]["result"]["protocolVersion"], "2025-06-18");
  EXPECT_EQ(r["2"][0]["result"]["protocolVersion"], kProtocolVersions.front());
  std::vector<std::string> names;
  for (const Json& t : r["1"][0]["result"]["tools"]) {
    names.push_back(t["name"]);
    EXPECT_EQ(t["inputSchema"]["type"], "object");
  }
  EXPECT_EQ(names,
            (std::vector<std::string>{"analyze", "table", "findings", "explain", "diff", "runs"}));
}

TEST(McpServer, AnalyzeGivesTheReportsFiguresAndIsTheSameBytesTwice) {
  auto r = Exchange({Init(), Call(1, "analyze", {{"path", "rank0.json"}}),
                     Call(2, "analyze", {{"path", kTraceDir + "/rank0.json"}})},
                    kTraceDir);
  const Json& out = r["1"][0]["result"];
  ASSERT_FALSE(out.value("isError", false)) << Line(out);
  EXPECT_EQ(Line(out), Line(r["2"][0]["result"]));
  // The same figures as the report the driver builds for the CLI.
  auto in = analysis::InputsOfOneRun({kTraceDir + "/rank0.json"}, "");
  ASSERT_TRUE(in.ok());
  auto run = analysis::AnalyzeRun(*in, {}, {});
  ASSERT_TRUE(run.ok());
  const Json report = Json::parse(report::RenderJsonString((*run)->report));
  std::map<std::string, Json> metrics;
  for (const Json& m : out["structuredContent"]["metrics"]) metrics[m["id"]] = m["value"];
  size_t compared = 0;
  for (const Json& s : report["sections"]) {
    for (const auto& [key, m] : s["metrics"].items()) {
      EXPECT_EQ(metrics[s["id"].get<std::string>() + "." + key], m["value"]) << key;
      ++compared;
    }
  }
  EXPECT_GT(compared, 3u);
  EXPECT_EQ(out["structuredContent"]["findings"][0]["rule"], "host_wait");
  EXPECT_EQ(out["content"][0]["text"], Line(out["structuredContent"]));
}

TEST(McpServer, TablePagesFiltersAndSorts) {
  auto r = Exchange(
      {Init(),
       Call(1, "table",
            {{"path", "rank0.json"},
             {"table", "kernel_view/kernel_view"},
             {"sort_by", "total_s"},
             {"limit", 1}}),
       Call(2, "table",
            {{"path", "rank0.json"},
             {"table", "kernel_view"},
             {"sort_by", "total_s"},
             {"limit", 1},
             {"offset", 1}}),
       Call(3, "table",
            {{"path", "rank0.json"},
             {"table", "kernel_view"},
             {"where", Json::array({{{"column", "calls"}, {"op", ">"}, {"value", 1e9}}})}}),
       Call(4, "table", {{"path", "rank0.json"}, {"table", "no_such_table"}})},
      kTraceDir);
  const Json& first = r["1"][0]["result"]["structuredContent"];
  const Json& second = r["2"][0]["result"]["structuredContent"];
  ASSERT_EQ(first["rows"].size(), 1u) << Line(r["1"][0]);
  ASSERT_GE(first["matched_rows"].get<int>(), 2);
  EXPECT_GE(first["rows"][0]["total_s"].get<double>(), second["rows"][0]["total_s"].get<double>());
  EXPECT_NE(first["more"].get<std::string>().find("offset=1"), std::string::npos);
  EXPECT_EQ(r["3"][0]["result"]["structuredContent"]["matched_rows"], 0);
  EXPECT_TRUE(r["4"][0]["result"]["isError"].get<bool>());
  EXPECT_NE(
      r["4"][0]["result"]["content"][0]["text"].get<std::string>().find("kernel_view/kernel_view"),
      std::string::npos);
}

// Issue 69: a true/false column is filtered with JSON booleans; text or numbers for it are
// refused with a message that says what it takes.
TEST(McpServer, TableFiltersABoolColumnWithBooleans) {
  auto where = [](Json value) {
    return Json::array({{{"column", "tensor_cores"}, {"op", "="}, {"value", std::move(value)}}});
  };
  auto call = [&](int id, Json value) {
    return Call(id, "table",
                {{"path", "rank0.json"},
                 {"table", "kernel_view/kernel_view"},
                 {"where", where(std::move(value))},
                 {"limit", 500}});
  };
  auto r = Exchange(
      {Init(),
       Call(1, "table",
            {{"path", "rank0.json"}, {"table", "kernel_view/kernel_view"}, {"limit", 500}}),
       call(2, true), call(3, false), call(4, "false")},
      kTraceDir);
  const Json& all = r["1"][0]["result"]["structuredContent"];
  const Json& on = r["2"][0]["result"]["structuredContent"];
  const Json& off = r["3"][0]["result"]["structuredContent"];
  ASSERT_TRUE(on.contains("matched_rows")) << Line(r["2"][0]);
  ASSERT_TRUE(off.contains("matched_rows")) << Line(r["3"][0]);
  EXPECT_GT(off["matched_rows"].get<int>(), 0);
  EXPECT_EQ(on["matched_rows"].get<int>() + off["matched_rows"].get<int>(),
            all["matched_rows"].get<int>());
  for (const Json& row : off["rows"]) EXPECT_FALSE(row["tensor_cores"].get<bool>());
  ASSERT_TRUE(r["4"][0].contains("error")) << Line(r["4"][0]);
  EXPECT_NE(r["4"][0]["error"]["message"].get<std::string>().find("JSON boolean"),
            std::string::npos);
}

// Issue 70: the MCP diff compares two memory snapshots as `trainprof diff a.pickle b.pickle`
// does (it failed on pickles: only traces were read).
TEST(McpServer, DiffComparesTwoSnapshots) {
  const std::string dir = std::string(TRAINPROF_SOURCE_DIR) + "/tests/data/snapshots";
  auto r = Exchange({Init(),
                     Call(1, "diff",
                          {{"baseline", "torch2.11_h200_compiled_default.pickle"},
                           {"candidate", "torch2.11_h200_compiled_reduce-overhead.pickle"}}),
                     Call(2, "diff",
                          {{"baseline", "torch2.11_h200_transformer.pickle"},
                           {"candidate", "torch2.11_h200_transformer.facts.json"}})},
                    dir);
  const Json& ok = r["1"][0];
  ASSERT_TRUE(ok.contains("result")) << Line(ok);
  EXPECT_FALSE(ok["result"].value("isError", false)) << Line(ok);
  EXPECT_NE(Line(ok["result"]["structuredContent"]).find("snapshot_diff"), std::string::npos)
      << Line(ok).substr(0, 400);
  const std::string mixed = Line(r["2"][0]);
  EXPECT_NE(mixed.find("a snapshot with a snapshot"), std::string::npos) << mixed.substr(0, 400);
}

// Issue 69: an error quoting a 5 MB argument quotes it cut short.
TEST(McpServer, ErrorsQuoteHugeArgumentsCutShort) {
  const std::string huge(5'000'000, 'x');
  auto r = Exchange({Init(), Call(1, "table", {{"path", huge}, {"table", "kernel_view"}}),
                     Call(2, huge, Json::object())},
                    kTraceDir);
  for (const char* id : {"1", "2"}) {
    const std::string reply = Line(r[id][0]);
    EXPECT_LT(reply.size(), 3000u) << id;
    EXPECT_NE(reply.find("more characters"), std::string::npos) << reply.substr(0, 300);
  }
}

TEST(McpServer, FindingsCarryTheirThresholdAndEvidenceRows) {
  auto r =
      Exchange({Init(), Call(1, "findings", {{"path", "rank0.json"}}),
                Call(2, "explain", {{"what", "dataloader"}}),
                Call(3, "explain", {{"what", "recommendations#2"}, {"path", "rank0.json"}}),
                Call(4, "explain", {{"what", "gpu.avg_utilization_pct"}, {"path", "rank0.json"}})},
               kTraceDir);
  const Json& f = r["1"][0]["result"]["structuredContent"]["findings"];
  ASSERT_GE(f.size(), 2u);
  EXPECT_EQ(f[1]["rule"], "low_utilization");
  EXPECT_EQ(f[1]["threshold"], "GPU utilization < 50%");
  EXPECT_EQ(f[1]["evidence"][0]["table"], "gpu/gpu_summary");
  EXPECT_DOUBLE_EQ(f[1]["evidence"][0]["rows"][0]["utilization_pct"].get<double>(), 40.0);
  EXPECT_EQ(r["2"][0]["result"]["structuredContent"]["threshold"],
            "DataLoader > 5% of the average step");
  EXPECT_EQ(r["3"][0]["result"]["structuredContent"]["rule"], "low_utilization");
  EXPECT_DOUBLE_EQ(r["4"][0]["result"]["structuredContent"]["value"].get<double>(), 40.0);
}

TEST(McpServer, BadCallsGetErrorsAndTheServerGoesOn) {
  const std::string cut = testutil::FreshTempDir() + "/cut.json";
  {
    std::ifstream src(kTraceDir + "/rank0.json");
    std::string text((std::istreambuf_iterator<char>(src)), {});
    std::ofstream(cut) << text.substr(0, 3000);
  }
  const std::string root = fs::path(cut).parent_path().string();
  fs::copy_file(kTraceDir + "/rank0.json", root + "/rank0.json");
  auto r = Exchange(
      {Init(), Call(1, "analyze", {{"path", "/etc/passwd"}}),
       Call(2, "analyze", {{"path", "missing.json"}}), Call(3, "analyze", {{"path", "cut.json"}}),
       Call(4, "analyze", {{"path", "cut.json"}, {"allow_data_errors", true}}),
       Call(5, "nope", Json::object()),
       Call(6, "table", {{"path", "rank0.json"}, {"table", "x"}, {"limit", "ten"}}),
       Request(7, "no/such/method", Json::object()), Json("not an object"),
       Request(8, "ping", Json::object())},
      root);
  EXPECT_EQ(r["1"][0]["error"]["code"], kInvalidParams);
  EXPECT_NE(r["1"][0]["error"]["message"].get<std::string>().find("/etc/passwd: outside"),
            std::string::npos);
  EXPECT_TRUE(r["2"][0]["result"]["isError"].get<bool>());
  EXPECT_NE(Line(r["2"][0]).find("missing.json"), std::string::npos);
  EXPECT_TRUE(r["3"][0]["result"]["isError"].get<bool>());
  EXPECT_NE(Line(r["3"][0]).find("cut short"), std::string::npos);
  EXPECT_FALSE(r["4"][0]["result"].value("isError", false));
  EXPECT_EQ(r["5"][0]["error"]["code"], kInvalidParams);
  EXPECT_NE(r["6"][0]["error"]["message"].get<std::string>().find("limit: expected an integer"),
            std::string::npos);
  EXPECT_EQ(r["7"][0]["error"]["code"], kMethodNotFound);
  EXPECT_EQ(r[""][0]["error"]["code"], kInvalidRequest);
  EXPECT_TRUE(r["8"][0]["result"].is_object());
}

// Input that ends only after a pause, as a client that stays connected without answering.
class SlowEnd : public std::stringbuf {
 public:
  using std::stringbuf::stringbuf;

 protected:
  int_type underflow() override {
    const int_type c = std::stringbuf::underflow();
    if (c == traits_type::eof() && !paused_) {
      paused_ = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(400));
    }
    return c;
  }

 private:
  bool paused_ = false;
};

TEST(McpServer, AClientThatNeverAnswersRootsListIsServedUnderTheRootFolders) {
  Json init = Init();
  init["params"]["capabilities"] = {{"roots", {{"listChanged", true}}}};
  std::string text;
  for (const Json& m :
       {init, Notification("notifications/initialized", Json::object()),
        Call(1, "analyze", {{"path", "rank0.json"}}), Call(2, "analyze", {{"path", "rank0.json"}})})
    text += Line(m) + "\n";
  SlowEnd buf(text);
  std::istream in(&buf);
  std::stringstream out;
  ServerOptions o;
  o.roots = {kTraceDir};
  o.roots_wait_ms = 50;
  testing::internal::CaptureStderr();
  EXPECT_EQ(Serve(o, in, out), 0);
  const std::string err = testing::internal::GetCapturedStderr();
  // One wait, not one per call: the first call gives up on the client's roots for good.
  EXPECT_EQ(err,
            "trainprof mcp: the client did not answer roots/list; reading under the "
            "--root folders or the working folder\n");
  std::vector<Json> replies;
  for (std::string line; std::getline(out, line);) replies.push_back(Json::parse(line));
  ASSERT_EQ(replies.size(), 4u);  // initialize's result, roots/list, then the two calls
  EXPECT_EQ(replies[1]["method"], "roots/list");
  EXPECT_FALSE(replies[2]["result"].value("isError", false));
  EXPECT_EQ(Line(replies[2]["result"]), Line(replies[3]["result"]));
}

TEST(McpServer, ResourcesAreTheRunFoldersUnderTheRoots) {
  const std::string root = testutil::FreshTempDir();
  fs::create_directories(root + "/runs/one");
  std::ofstream(root + "/runs/one/report.json") << R"({"schema_version": 1})";
  std::ofstream(root + "/secret.bin") << std::string("a\0b", 3);
  auto r =
      Exchange({Init(), Request(1, "resources/list", Json::object()),
                Request(2, "resources/read", {{"uri", FileUri(root + "/runs/one/report.json")}}),
                Request(3, "resources/read", {{"uri", "file:///etc/passwd"}}),
                Request(4, "resources/read", {{"uri", FileUri(root + "/secret.bin")}})},
               root);
  const Json& list = r["1"][0]["result"]["resources"];
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0]["name"], "one/report.json");
  EXPECT_EQ(r["2"][0]["result"]["contents"][0]["text"], R"({"schema_version": 1})");
  EXPECT_EQ(r["3"][0]["error"]["code"], kInvalidParams);
  EXPECT_EQ(r["4"][0]["error"]["code"], kInvalidParams);
}

}  // namespace
}  // namespace trainprof::mcp
