#include "session/rank_merge.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/atomic_file.h"
#include "util/golden.h"

namespace trainprof::session {
namespace {

using nlohmann::json;

// A rank's report.json with the figures the merge reads.
std::string RankReport(int64_t start_ns, double median_s, double samples_per_s) {
  json speed = {{"id", "speed"},
                {"metrics",
                 {{"training_avg_throughput_per_sample", {{"value", samples_per_s}}},
                  {"training_dataloader_wait_pct", {{"value", 12.5}}},
                  {"training_communication_s", {{"value", 0.25}}},
                  {"training_communication_pct", {{"value", 20.0}}}}},
                {"tables",
                 {{{"id", "speed_report"},
                   {"rows",
                    {{{"stage", "training"},
                      {"steps", 40},
                      {"median_s", median_s},
                      {"min_s", median_s / 2},
                      {"max_s", median_s * 2}}}}}}}};
  json r = {
      {"meta",
       {{"host", {{"name", "node1"}}}, {"start_steady_ns", start_ns}, {"peak_rss_bytes", 1 << 20}}},
      {"sections", {speed}},
      {"diagnostics",
       {{{"severity", "warning"}, {"name", "dropped_events"}, {"count", 3}, {"message", "x"}}}}};
  return r.dump();
}

std::string Trace(double ts_us) {
  json t = {
      {"traceEvents",
       {{{"ph", "M"},
         {"name", "process_name"},
         {"pid", 77},
         {"args", {{"name", "trainprof: job"}}}},
        {{"ph", "X"}, {"name", "step"}, {"pid", 77}, {"tid", 5}, {"ts", ts_us}, {"dur", 2.5}}}}};
  return t.dump();
}

MergeInput ThreeRanks() {
  MergeInput in;
  in.world_size = 4;
  in.launcher = "slurm";
  in.name = "job";
  // Rank 1 started 1 ms after rank 0 on its own clock, whose offset to rank 0's is +5 ms.
  in.ranks.push_back(
      {1, "ok", 5'000'000, 20'000, RankReport(1'000'000'000 + 1'000'000, 0.013, 900), Trace(10)});
  in.ranks.push_back({0, "ok", 0, 0, RankReport(1'000'000'000, 0.010, 1000), Trace(10)});
  in.ranks.push_back(
      {2, "training failed: boom", 0, 7'000, RankReport(1'000'000'000, 0.010, 1100), ""});
  in.missing.push_back({3, "sent nothing"});
  return in;
}

TEST(RankMerge, PerRankTableStragglerAndMissingRanks) {
  auto r = MergeRankReports(ThreeRanks());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const report::Section* s = r->FindSection("ranks");
  ASSERT_NE(s, nullptr);
  const report::Table& t = s->tables.front();
  ASSERT_EQ(t.rows.size(), 3u);
  EXPECT_EQ(std::get<int64_t>(t.rows[0][0]), 0);  // sorted by rank
  EXPECT_EQ(std::get<int64_t>(t.rows[1][0]), 1);
  EXPECT_EQ(std::get<std::string>(t.rows[2][2]), "training failed: boom");
  auto metric = [&](const char* key) {
    for (const report::Metric& m : s->metrics) {
      if (m.key == key) return m.value;
    }
    return report::Value();
  };
  EXPECT_DOUBLE_EQ(std::get<double>(metric("training_throughput_per_sample")), 3000);
  EXPECT_EQ(std::get<int64_t>(metric("slowest_rank")), 1);
  // Median of the medians (10, 10, 13 ms) is 10 ms: rank 1 is 30 % slower.
  EXPECT_NEAR(std::get<double>(metric("straggler_gap_pct")), 30.0, 1e-9);
  ASSERT_FALSE(s->findings.empty());
  EXPECT_NE(s->findings[0].text.find("rank 1 is the slowest"), std::string::npos);
  EXPECT_EQ(s->findings[0].severity, report::Severity::kWarning);
  std::map<std::string, int> names;
  for (const report::Diagnostic& d : r->diagnostics) ++names[std::string(d.name())];
  EXPECT_EQ(names["rank_failed"], 1);
  EXPECT_EQ(names["rank_missing"], 1);
  EXPECT_EQ(names["dropped_events"], 3);  // each rank's own diagnostics, named by rank
}

TEST(RankMerge, NoStragglerFindingBelowTheThreshold) {
  MergeInput in = ThreeRanks();
  in.ranks[0].report_json = RankReport(0, 0.0102, 900);  // 2 % slower
  auto r = MergeRankReports(in);
  ASSERT_TRUE(r.ok());
  const report::Section* s = r->FindSection("ranks");
  for (const report::Finding& f : s->findings) {
    EXPECT_EQ(f.text.find("slowest"), std::string::npos) << f.text;
  }
  ASSERT_FALSE(s->notes.empty());
  EXPECT_NE(s->notes[0].find("rank 1 is the slowest"), std::string::npos);
}

// Ranks that recorded no communication action (DDP reduces gradients inside backward): the
// empty Comm columns say why; with the action recorded, no such note.
TEST(RankMerge, EmptyCommunicationColumnsSayWhy) {
  auto why = [](const report::Report& r) {
    const report::Table* t = r.FindSection("ranks")->FindTable("rank_summary");
    for (const std::string& n : t->notes)
      if (n.rfind("comm is empty:", 0) == 0) return true;
    return false;
  };
  auto with = MergeRankReports(ThreeRanks());
  ASSERT_TRUE(with.ok());
  EXPECT_FALSE(why(*with));
  MergeInput in = ThreeRanks();
  for (RankResult& rank : in.ranks) {
    json r = json::parse(rank.report_json);
    r["sections"][0]["metrics"].erase("training_communication_s");
    r["sections"][0]["metrics"].erase("training_communication_pct");
    rank.report_json = r.dump();
  }
  auto without = MergeRankReports(in);
  ASSERT_TRUE(without.ok());
  EXPECT_TRUE(why(*without));
}

TEST(RankMerge, TraceHasAProcessPerRankOnRankZerosClock) {
  const std::string path = testutil::FreshTempDir() + "/trace.json";
  ASSERT_TRUE(WriteMergedTrace(ThreeRanks(), path).ok());
  json t = json::parse(*base::ReadFile(path));
  std::map<int64_t, double> step_ts;
  std::map<int64_t, std::string> names;
  for (const json& e : t["traceEvents"]) {
    if (e["ph"] == "X") step_ts[e["pid"]] = e["ts"];
    if (e["name"] == "process_name") names[e["pid"]] = e["args"]["name"];
  }
  EXPECT_EQ(names[0], "rank 0: trainprof: job");
  EXPECT_EQ(names[1], "rank 1: trainprof: job");
  EXPECT_DOUBLE_EQ(step_ts[0], 10);
  // 1 ms later start + 5 ms offset = 6 ms after rank 0's origin.
  EXPECT_DOUBLE_EQ(step_ts[1], 6010);
  EXPECT_EQ(step_ts.count(2), 0u);  // rank 2 wrote no trace
  EXPECT_NE(t["otherData"]["clock_alignment"].get<std::string>().find("20000 ns"),
            std::string::npos);
}

TEST(RankMerge, UnparsableReportNamesTheRank) {
  MergeInput in = ThreeRanks();
  in.ranks[0].report_json = "{not json";
  auto r = MergeRankReports(in);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "rank 1: its report.json does not parse as JSON");
}

}  // namespace
}  // namespace trainprof::session
