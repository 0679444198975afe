#include "trace/chrome_trace_writer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "util/golden.h"

namespace trainprof::trace {
namespace {

TEST(ChromeTraceWriter, WritesValidJsonWithExactFractionalMicroseconds) {
  std::string out;
  ChromeTraceWriter w;
  w.OpenString(&out);
  w.ProcessName(7, "trainprof: \"quoted\"");
  w.ThreadName(7, 42, "main");
  NameId fwd = w.InternName("[Model].forward\n");
  w.Complete(fwd, kCatScope, 1500, 2501, 7, 42, 3);
  w.Complete(fwd, kCatScope, 2'000'000, 1000, 7, 42, -1);
  w.Counter("memory", 5, 7, 1.5);
  w.OtherData("producer", "test");
  ASSERT_TRUE(w.Close().ok());

  auto j = nlohmann::json::parse(out);
  const auto& ev = j["traceEvents"];
  ASSERT_EQ(ev.size(), 5u);
  EXPECT_EQ(ev[0]["args"]["name"], "trainprof: \"quoted\"");
  EXPECT_EQ(ev[1]["ph"], "M");
  EXPECT_EQ(ev[2]["name"], "[Model].forward\n");
  EXPECT_EQ(ev[2]["ph"], "X");
  EXPECT_DOUBLE_EQ(ev[2]["ts"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(ev[2]["dur"].get<double>(), 2.501);
  EXPECT_EQ(ev[2]["args"]["step"], 3);
  EXPECT_EQ(ev[3]["ts"], 2000);  // whole microseconds print without a fraction
  EXPECT_FALSE(ev[3].contains("args"));
  EXPECT_EQ(ev[4]["ph"], "C");
  EXPECT_DOUBLE_EQ(ev[4]["args"]["value"].get<double>(), 1.5);
  EXPECT_EQ(j["otherData"]["producer"], "test");
  EXPECT_EQ(w.bytes_written(), out.size());
}

TEST(ChromeTraceWriter, FileAppearsOnlyAfterCloseAndSurvivesFlushes) {
  const std::string dir = testutil::FreshTempDir();
  std::string path = dir + "/trace.json";
  ChromeTraceWriter w;
  ASSERT_TRUE(w.Open(path).ok());
  NameId n = w.InternName("step");
  for (int i = 0; i < 100000; ++i) w.Complete(n, kCatScope, i * 1000, 500, 1, 1, i);  // > 1 MiB
  EXPECT_FALSE(std::filesystem::exists(path));
  ASSERT_TRUE(w.Close().ok());
  std::ifstream in(path);
  auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["traceEvents"].size(), 100000u);
  EXPECT_EQ(j["traceEvents"][99999]["args"]["step"], 99999);
}

TEST(ChromeTraceWriter, OpenFailsWithTheFileNamed) {
  ChromeTraceWriter w;
  Status s = w.Open("/nonexistent-dir-trainprof/trace.json");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("/nonexistent-dir-trainprof/trace.json"), std::string::npos);
}

}  // namespace
}  // namespace trainprof::trace
