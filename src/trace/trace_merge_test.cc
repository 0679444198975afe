// WriteMergedTrace (trainprof run's trace.json) on traces with odd events: the merge keeps each
// rank's processes apart and never throws on a value of an unexpected type.
#include "trace/trace_merge.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "util/golden.h"

namespace trainprof::trace {
namespace {

using Json = nlohmann::json;

std::string Write(const std::string& dir, const std::string& name, const Json& j) {
  const std::string path = dir + "/" + name;
  std::ofstream(path) << j.dump();
  return path;
}

TEST(MergedTrace, EachTraceKeepsItsProcessesAndOddValuesPassThrough) {
  const std::string dir = testutil::FreshTempDir();
  const Json gpu_name = {
      {"ph", "M"}, {"name", "process_name"}, {"pid", 0}, {"args", {{"name", "GPU 0"}}}};
  const Json kernel = {{"ph", "X"}, {"cat", "kernel"}, {"name", "k"}, {"pid", 0},
                       {"tid", 7},  {"ts", 10.0},      {"dur", 5.0}};
  const Json a = {{"distributedInfo", {{"rank", 0}}}, {"traceEvents", {gpu_name, kernel}}};
  const Json b = {{"distributedInfo", {{"rank", "three"}}},  // not a number: its place is used
                  {"traceEvents",
                   {gpu_name,
                    kernel,
                    5,
                    {{"ph", 1}, {"name", "process_name"}},
                    {{"ph", "M"}, {"name", "process_name"}, {"args", {{"name", 7}}}}}}};
  MergeInput in;
  in.traces = {Write(dir, "a.json", a), Write(dir, "b.json", b)};
  in.clock_offsets_ns = {0, 2000};  // b's clock runs 2 µs ahead
  ASSERT_TRUE(WriteMergedTrace(in, dir + "/trace.json").ok());
  std::ifstream f(dir + "/trace.json");
  const Json merged = Json::parse(f);
  std::map<int64_t, std::string> names;
  std::map<int64_t, double> kernel_ts;
  for (const Json& e : merged["traceEvents"]) {
    if (!e.is_object() || !e.contains("pid") || !e["pid"].is_number_integer()) continue;
    const int64_t pid = e["pid"];
    if (e.value("name", std::string()) == "process_name" && e["args"]["name"].is_string())
      names[pid] = e["args"]["name"];
    if (e.value("cat", std::string()) == "kernel") kernel_ts[pid] = e["ts"];
  }
  EXPECT_EQ(names[0], "rank 0: GPU 0");
  EXPECT_EQ(names[int64_t{1} << 22], "rank 1: GPU 0");
  EXPECT_DOUBLE_EQ(kernel_ts[0], 10.0);
  EXPECT_DOUBLE_EQ(kernel_ts[int64_t{1} << 22], 8.0);
}

}  // namespace
}  // namespace trainprof::trace
