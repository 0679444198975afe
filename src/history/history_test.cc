#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "history/compare.h"
#include "history/key_figures.h"
#include "history/run_db.h"
#include "history/run_spread.h"
#include "report/csv.h"
#include "report/json.h"
#include "report/json_reader.h"
#include "report/packed_rows.h"
#include "util/golden.h"

namespace trainprof::history {
namespace {

using report::Unit;

// A profile report with the figures the history reads.
report::Report ProfileReport(double samples_per_s, double peak_rss, int64_t batch = 64) {
  report::Report r;
  r.kind = "profile";
  r.title = "trainprof report: fashion-mnist";
  r.AddMeta("created_utc", std::string("2026-11-23T10:00:00Z"));
  r.AddMeta("host.name", std::string("node-1"));
  r.AddMeta("peak_rss_bytes", peak_rss);
  r.config.emplace_back("training.batch_size", batch);
  r.config.emplace_back("output.name", std::string("fashion-mnist"));
  r.config.emplace_back("output.run_dir", std::string("/tmp/x"));
  report::Section& s = r.AddSection("speed", "Speed report");
  s.AddMetric("training_avg_throughput_per_sample", "Training throughput per sample", samples_per_s,
              Unit::kPerSecond, "samples/s");
  s.AddMetric("training_dataloader_wait_pct", "Training time waiting for data", 4.0,
              Unit::kPercent);
  report::Table& t = s.AddTable("speed_report", "Throughput per stage",
                                {{"stage", "Stage"}, {"mean_s", "Mean", Unit::kSeconds}});
  t.rows.push_back({std::string("training"), 64.0 / samples_per_s});
  return r;
}

RunRecord Record(const std::string& id, const std::string& kind, double throughput,
                 const std::string& commit = "") {
  RunRecord r =
      RecordFromReport(ProfileReport(throughput, 1e9), "/tmp/run-" + id, {commit, "main"});
  r.id = id;
  r.kind = kind;
  return r;
}

TEST(KeyFiguresTest, FromAProfileReport) {
  KeyFigures k = ExtractKeyFigures(ProfileReport(1000, 2e9));
  EXPECT_DOUBLE_EQ(k.Get("training_throughput"), 1000);
  EXPECT_DOUBLE_EQ(k.Get("step_time"), 0.064);
  EXPECT_DOUBLE_EQ(k.Get("dataloader_share"), 4.0);
  EXPECT_DOUBLE_EQ(k.Get("peak_memory"), 2e9);
  EXPECT_TRUE(std::isnan(k.Get("energy_per_sample")));  // not measured is empty, never 0
  EXPECT_TRUE(std::isnan(k.Get("no_such_figure")));
}

// An analyze run whose trace has no data-loader range: its DataLoader share is unknown, not 0 %.
TEST(KeyFiguresTest, AnUnmarkedDataLoaderShareIsUnknown) {
  report::Report r;
  r.kind = "analyze";
  report::Section& o = r.AddSection("overview", "Overview");
  o.AddTable("step_breakdown_average", "Average step",
             {{"rank", "Rank"}, {"dataloader_pct", "DataLoader", Unit::kPercent}})
      .rows.push_back({std::string("0"), 0.0});
  report::Section& p = r.AddSection("phase_view", "Phase view");
  p.AddMetric("dataloader_markers", "Data-loader ranges", int64_t{0}, Unit::kCount);
  EXPECT_TRUE(std::isnan(ExtractKeyFigures(r).Get("dataloader_share")));
  p.metrics[0].value = int64_t{3};
  EXPECT_DOUBLE_EQ(ExtractKeyFigures(r).Get("dataloader_share"), 0.0);
  // Many ranks' averages are in their CSV only, packed: the share is read from them all the same.
  report::Table& avg = r.sections[0].tables[0];
  avg.KeepInCsvOnly();
  report::PackRows(avg);
  EXPECT_DOUBLE_EQ(ExtractKeyFigures(r).Get("dataloader_share"), 0.0);
}

// `run --traces` without a Session inside: no speed section, so its step times are those of the
// traces it collected, and the gate can decide on it.
TEST(KeyFiguresTest, ARunWithTracesHasTheTracesStepTime) {
  report::Report r;
  r.kind = "run";
  report::Section& o = r.AddSection("overview", "Overview");
  o.AddMetric("avg_step_time_s", "Average step", 0.025, Unit::kSeconds);
  report::Table& t = o.AddTable(
      "step_breakdown", "Steps",
      {{"rank", "Rank"}, {"step", "Step", Unit::kCount}, {"step_time_s", "Step", Unit::kSeconds}});
  for (int64_t step : {1, 2, 3}) {  // two ranks; each step is the mean of its ranks
    t.rows.push_back({std::string("0"), step, 0.010 * static_cast<double>(step)});
    t.rows.push_back({std::string("1"), step, 0.010 * static_cast<double>(step) + 0.004});
  }
  const KeyFigures k = ExtractKeyFigures(r);
  EXPECT_DOUBLE_EQ(k.Get("step_time"), 0.025);
  EXPECT_DOUBLE_EQ(k.Get("step_time_median"), 0.022);
  const RunRecord rec = RecordFromReport(r, "/tmp/x", {});
  EXPECT_EQ(rec.steps, 3);
  EXPECT_TRUE(std::isfinite(rec.step_log_sd));
  // Many ranks' table is in its CSV only, its rows packed: they are read all the same.
  t.KeepInCsvOnly();
  report::PackRows(t);
  ASSERT_TRUE(t.rows.empty());
  EXPECT_DOUBLE_EQ(ExtractKeyFigures(r).Get("step_time_median"), 0.022);
  EXPECT_EQ(RecordFromReport(r, "/tmp/x", {}).steps, 3);
  // `compare` and `gate` read the run back from its folder: the rows come from its CSV.
  const std::string dir = testutil::FreshTempDir();
  ASSERT_TRUE(report::WriteCsvFiles(r, dir, nullptr).ok());
  std::ofstream(dir + "/report.json") << report::RenderJsonString(r);
  auto back = report::ReadReportJson(dir + "/report.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_DOUBLE_EQ(ExtractKeyFigures(*back).Get("step_time_median"), 0.022);
  EXPECT_EQ(RecordFromReport(*back, dir, {}).steps, 3);
}

TEST(KeyFiguresTest, ConfigHashIgnoresOutputKeys) {
  report::Report a = ProfileReport(1, 1), b = ProfileReport(1, 1), c = ProfileReport(1, 1, 32);
  b.config[2].second = std::string("/elsewhere");
  EXPECT_EQ(ConfigHash(a), ConfigHash(b));
  EXPECT_NE(ConfigHash(a), ConfigHash(c));
  EXPECT_EQ(ConfigHash(a).size(), 16u);
}

TEST(RunDbTest, ConcurrentWritersLoseNothing) {
  const std::string path = testutil::FreshTempDir() + "/history/trainprof.db";
  constexpr int kWriters = 8, kRuns = 40;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      // Each writer opens its own connection, as separate ranks and jobs do; the first ones
      // race to create the database.
      auto db = RunDb::Open(path, true);
      if (!db.ok()) {
        ++failures;
        ADD_FAILURE() << db.status().message();
        return;
      }
      for (int i = 0; i < kRuns; ++i) {
        Status s = (*db)->Insert(Record(fmt::format("w{}-{}", w, i), "profile", 100.0 + i));
        if (!s.ok()) ++failures, ADD_FAILURE() << s.message();
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  auto db = RunDb::Open(path, false);
  ASSERT_TRUE(db.ok()) << db.status().message();
  auto all = (*db)->List({.last = 0});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), static_cast<size_t>(kWriters * kRuns));
  std::set<std::string> ids;
  for (const RunRecord& r : *all) ids.insert(r.id);
  EXPECT_EQ(ids.size(), static_cast<size_t>(kWriters * kRuns));
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  sqlite3_stmt* mode = nullptr;
  sqlite3_prepare_v2(raw, "PRAGMA journal_mode", -1, &mode, nullptr);
  ASSERT_EQ(sqlite3_step(mode), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(mode, 0)), "wal");
  sqlite3_finalize(mode);
  sqlite3_close(raw);
}

TEST(RunDbTest, ListFindAndWhere) {
  const std::string path = testutil::FreshTempDir() + "/trainprof.db";
  auto db = RunDb::Open(path, true);
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE((*db)->Insert(Record("20261123T100000Z-aaaaaa", "profile", 500, "c1")).ok());
  ASSERT_TRUE((*db)->Insert(Record("20261123T100100Z-bbbbbb", "analyze", 700, "c2")).ok());
  ASSERT_TRUE((*db)->Insert(Record("20261123T100200Z-cccccc", "profile", 900, "c3")).ok());

  auto last2 = (*db)->List({.last = 2});
  ASSERT_TRUE(last2.ok());
  ASSERT_EQ(last2->size(), 2u);
  EXPECT_EQ((*last2)[0].id, "20261123T100200Z-cccccc");  // newest first
  EXPECT_DOUBLE_EQ((*last2)[0].figures.Get("training_throughput"), 900);

  auto fast = (*db)->List({.last = 0, .where = {"kind = profile", "training_throughput > 600"}});
  ASSERT_TRUE(fast.ok());
  ASSERT_EQ(fast->size(), 1u);
  EXPECT_EQ((*fast)[0].id, "20261123T100200Z-cccccc");
  auto by_alias = (*db)->List({.last = 0, .where = {"commit ~ c2"}});
  ASSERT_TRUE(by_alias.ok());
  ASSERT_EQ(by_alias->size(), 1u);
  EXPECT_EQ((*by_alias)[0].kind, "analyze");

  auto typo = (*db)->List({.where = {"trainin_throughput > 5"}});
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("unknown field \"trainin_throughput\" (did you mean "
                                         "\"training_throughput\"?)"),
            std::string::npos)
      << typo.status().message();
  auto nan = (*db)->List({.where = {"step_time < fast"}});
  ASSERT_FALSE(nan.ok());
  EXPECT_EQ(
      nan.status().message(),
      "--where 'step_time < fast': \"step_time\" is a number field; \"fast\" is not a number");
  EXPECT_FALSE((*db)->List({.where = {"kind profile"}}).ok());

  EXPECT_EQ((*db)->Find("latest")->id, "20261123T100200Z-cccccc");
  EXPECT_EQ((*db)->Find("latest~2")->id, "20261123T100000Z-aaaaaa");
  EXPECT_EQ((*db)->Find("20261123T1001")->id, "20261123T100100Z-bbbbbb");
  EXPECT_EQ((*db)->Find("latest~3").status().code(), StatusCode::kNotFound);
  EXPECT_EQ((*db)->Find("latest~x").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*db)->Find("nope").status().code(), StatusCode::kNotFound);
  auto ambiguous = (*db)->Find("20261123T10");
  ASSERT_FALSE(ambiguous.ok());
  EXPECT_NE(ambiguous.status().message().find("several runs"), std::string::npos);

  auto ancestor = (*db)->NewestAtCommits({"c9", "c1", "c2"}, "profile", "");
  ASSERT_TRUE(ancestor.ok() && ancestor->has_value());
  EXPECT_EQ((**ancestor).id, "20261123T100000Z-aaaaaa");  // c2 is an analyze run
  auto none = (*db)->NewestAtCommits({"c1"}, "profile", "20261123T100000Z-aaaaaa");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

// A history of one run, taken back to an older schema by `sql` (columns dropped, the version
// set), as an older trainprof left it.
std::string OldHistory(const std::string& name, const char* sql) {
  const std::string path = testutil::FreshTempDir() + "/" + name;
  {
    auto db = RunDb::Open(path, true);
    EXPECT_TRUE(db.ok());
    EXPECT_TRUE((*db)->Insert(Record("20261123T100000Z-aaaaaa", "profile", 500)).ok());
  }
  sqlite3* raw = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(raw, sql, nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(raw);
  return path;
}

// A history written by schema 1 (no step_time_median) is upgraded in place when opened: its
// rows stay, with no median, and new runs record one.
TEST(RunDbTest, ASchemaOneHistoryIsUpgraded) {
  const std::string path =
      OldHistory("old.db",
                 "ALTER TABLE runs DROP COLUMN step_time_median; ALTER TABLE runs DROP COLUMN "
                 "device; ALTER TABLE runs DROP COLUMN steps; ALTER TABLE runs DROP COLUMN "
                 "step_log_sd; PRAGMA user_version = 1");
  auto db = RunDb::Open(path, false);
  ASSERT_TRUE(db.ok()) << db.status().message();
  report::Report r = ProfileReport(600, 1e9);
  r.sections[0].tables[0].columns.push_back({"median_s", "Median", Unit::kSeconds});
  r.sections[0].tables[0].rows[0].push_back(0.1);
  ASSERT_TRUE((*db)->Insert(RecordFromReport(r, "/tmp/new", {})).ok());
  auto runs = (*db)->List({.last = 0});
  ASSERT_TRUE(runs.ok()) << runs.status().message();
  ASSERT_EQ(runs->size(), 2u);
  EXPECT_DOUBLE_EQ((*runs)[0].figures.Get("step_time_median"), 0.1);
  EXPECT_TRUE(std::isnan((*runs)[1].figures.Get("step_time_median")));
  EXPECT_DOUBLE_EQ((*runs)[1].figures.Get("training_throughput"), 500);
}

// Schema 3 adds the device and the within-run noise; a schema 2 history gets them, empty in its
// old rows.
TEST(RunDbTest, ASchemaTwoHistoryIsUpgradedAndKeepsDeviceAndStepNoise) {
  const std::string path =
      OldHistory("v2.db",
                 "ALTER TABLE runs DROP COLUMN device; ALTER TABLE runs DROP COLUMN steps; ALTER "
                 "TABLE runs DROP COLUMN step_log_sd; PRAGMA user_version = 2");
  auto db = RunDb::Open(path, false);
  ASSERT_TRUE(db.ok()) << db.status().message();
  RunRecord rec = Record("20261123T110000Z-bbbbbb", "profile", 600);
  rec.device = "cuda";
  rec.steps = 290;
  rec.step_log_sd = 0.04;
  ASSERT_TRUE((*db)->Insert(rec).ok());
  auto runs = (*db)->List({.last = 0, .where = {"device = cuda"}});
  ASSERT_TRUE(runs.ok()) << runs.status().message();
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ((*runs)[0].steps, 290);
  EXPECT_DOUBLE_EQ((*runs)[0].step_log_sd, 0.04);
  auto all = (*db)->List({.last = 0});
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[1].device, "");
  EXPECT_EQ((*all)[1].steps, 0);
  EXPECT_TRUE(std::isnan((*all)[1].step_log_sd));
}

TEST(RunDbTest, ARecordKeepsItsDeviceAndStepNoise) {
  report::Report r = ProfileReport(640, 1e9);
  r.AddMeta("device", std::string("cpu"));
  report::Table& t = r.sections[0].AddTable("training_rate", "Training throughput per step",
                                            {{"step", "Step", Unit::kCount},
                                             {"batches_per_s", "Batches/s", Unit::kPerSecond},
                                             {"samples_per_s", "Samples/s", Unit::kPerSecond}},
                                            report::TableKind::kSeries);
  for (int64_t i = 0; i < 9; ++i) {
    const double step = i % 3 == 0 ? 0.11 : 0.10;  // a third of the steps 10 % slower
    t.rows.push_back({i, 1 / step, 64 / step});
  }
  const RunRecord rec = RecordFromReport(r, "/tmp/x", {});
  EXPECT_EQ(rec.device, "cpu");
  EXPECT_EQ(rec.steps, 9);
  EXPECT_NEAR(rec.step_log_sd, 0.0, 1e-12);  // the median absolute deviation is 0
}

// A run with the step-time figures the spread reads.
RunRecord SpreadRow(const std::string& host, const std::string& device, double median,
                    const std::string& commit = "c1") {
  RunRecord r;
  r.host = host;
  r.device = device;
  r.git_commit = commit;
  r.config_hash = "0123456789abcdef";
  r.figures.values[static_cast<size_t>(FigureIndex("step_time_median"))] = median;
  return r;
}

TEST(RunSpreadTest, OtherHostsAndDevicesAreNeverNoise) {
  std::vector<RunRecord> rows = {SpreadRow("a", "cpu", 0.100), SpreadRow("b", "cpu", 0.500),
                                 SpreadRow("a", "cuda", 0.900), SpreadRow("a", "cpu", 0.102),
                                 SpreadRow("a", "cpu", 0.098)};
  RunSpread s = SpreadOfRecords(rows, {"a", "cpu", "c1", ""});
  EXPECT_EQ(s.runs, 3);
  EXPECT_NEAR(s.sd, 0.02, 0.001);  // log 0.100, 0.102, 0.098: sd 0.0200
  EXPECT_NE(s.source.find("3 runs of config 01234567 on a (cpu) at commit c1"), std::string::npos)
      << s.source;
  // Two runs of host b: too few, and counted as such.
  s = SpreadOfRecords(rows, {"b", "cpu", "c1", ""});
  EXPECT_EQ(s.runs, 1);
  EXPECT_TRUE(std::isnan(s.sd));
}

TEST(RunSpreadTest, RunsAtTheSameCommitComeFirstElseAllCommits) {
  std::vector<RunRecord> rows = {
      SpreadRow("a", "cpu", 0.100, "c2"), SpreadRow("a", "cpu", 0.110, "c1"),
      SpreadRow("a", "cpu", 0.090, "c1"), SpreadRow("a", "cpu", 0.100, "c3")};
  RunSpread s = SpreadOfRecords(rows, {"a", "cpu", "c2", ""});
  EXPECT_EQ(s.runs, 4);
  EXPECT_NE(s.source.find("across 3 commits"), std::string::npos) << s.source;
  rows.push_back(SpreadRow("a", "cpu", 0.1001, "c2"));
  rows.push_back(SpreadRow("a", "cpu", 0.0999, "c2"));
  s = SpreadOfRecords(rows, {"a", "cpu", "c2", ""});
  EXPECT_EQ(s.runs, 3);
  EXPECT_LT(s.sd, 0.002);  // the three runs at c2 agree to 0.1 %
}

TEST(RunSpreadTest, TheHistoryGivesTheSpreadOfTheBaselinesConfigOnly) {
  const std::string path = testutil::FreshTempDir() + "/spread.db";
  auto db = RunDb::Open(path, true);
  ASSERT_TRUE(db.ok());
  int64_t n = 0;
  for (double tput : {600.0, 610.0, 590.0, 605.0}) {
    report::Report r = ProfileReport(tput, 1e9);
    r.AddMeta("device", std::string("cpu"));
    r.sections[0].tables[0].columns.push_back({"median_s", "Median", Unit::kSeconds});
    r.sections[0].tables[0].rows[0].push_back(64.0 / tput);
    RunRecord rec = RecordFromReport(r, fmt::format("/tmp/s{}", n++), {"c1", "main"});
    ASSERT_TRUE((*db)->Insert(rec).ok());
    report::Report other = ProfileReport(tput / 2, 1e9, 128);  // another config: never used
    other.AddMeta("device", std::string("cpu"));
    other.sections[0].tables[0].columns.push_back({"median_s", "Median", Unit::kSeconds});
    other.sections[0].tables[0].rows[0].push_back(128.0 / tput * (n % 2 == 0 ? 3 : 1));
    ASSERT_TRUE(
        (*db)->Insert(RecordFromReport(other, fmt::format("/tmp/o{}", n), {"c1", ""})).ok());
  }
  report::Report base = ProfileReport(600, 1e9);
  base.AddMeta("device", std::string("cpu"));
  const RunSpread s = HistorySpread(**db, base, "c1", "");
  EXPECT_EQ(s.runs, 4);
  EXPECT_NEAR(s.sd, 0.014, 0.002);
  EXPECT_EQ(HistorySpread(**db, base, "c1", "/tmp/s0").runs, 3);  // the candidate is left out
  report::Report gpu = ProfileReport(600, 1e9);
  gpu.AddMeta("device", std::string("cuda"));
  EXPECT_EQ(HistorySpread(**db, gpu, "c1", "").runs, 0);
}

TEST(RunDbTest, OffOrNoneRecordsNothing) {
  EXPECT_EQ(DbPath("off"), "");
  EXPECT_EQ(DbPath("none"), "");
  EXPECT_EQ(DbPath("runs/h.db"), "runs/h.db");
}

TEST(RunDbTest, BadDatabasesAreClearErrors) {
  const std::string dir = testutil::FreshTempDir();
  EXPECT_EQ(RunDb::Open(dir + "/missing.db", false).status().code(), StatusCode::kNotFound);

  std::ofstream(dir + "/garbage.db") << std::string(4096, 'x');
  auto garbage = RunDb::Open(dir + "/garbage.db", true);
  ASSERT_FALSE(garbage.ok());
  EXPECT_EQ(garbage.status().message(),
            dir +
                "/garbage.db: not an SQLite database (damaged, or another kind of file); move "
                "it away and trainprof starts a new history");

  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open((dir + "/foreign.db").c_str(), &raw), SQLITE_OK);
  sqlite3_exec(raw, "CREATE TABLE songs(title TEXT)", nullptr, nullptr, nullptr);
  sqlite3_close(raw);
  auto foreign = RunDb::Open(dir + "/foreign.db", true);
  ASSERT_FALSE(foreign.ok());
  EXPECT_EQ(foreign.status().message(),
            dir +
                "/foreign.db: an SQLite database, but not trainprof's run history (it has 1 "
                "other tables)");

  {
    auto db = RunDb::Open(dir + "/newer.db", true);
    ASSERT_TRUE(db.ok());
  }
  ASSERT_EQ(sqlite3_open((dir + "/newer.db").c_str(), &raw), SQLITE_OK);
  sqlite3_exec(raw, "PRAGMA user_version = 7", nullptr, nullptr, nullptr);
  sqlite3_close(raw);
  auto newer = RunDb::Open(dir + "/newer.db", false);
  ASSERT_FALSE(newer.ok());
  EXPECT_EQ(newer.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(newer.status().message().find("schema 7 is newer"), std::string::npos);
}

LoadedRun Loaded(std::string given, report::Report r) {
  LoadedRun run;
  run.given = std::move(given);
  run.dir = "/runs/" + run.given;
  run.report = std::move(r);
  return run;
}

TEST(CompareTest, ParseBound) {
  auto b = ParseBound("training_throughput < -10%");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->figure, "training_throughput");
  EXPECT_EQ(b->op, "<");
  EXPECT_DOUBLE_EQ(b->limit, -10);
  EXPECT_TRUE(b->relative);
  auto abs = ParseBound("speed.training_dataloader_wait_pct>=+2.5");
  ASSERT_TRUE(abs.ok());
  EXPECT_FALSE(abs->relative);
  EXPECT_DOUBLE_EQ(abs->limit, 2.5);
  EXPECT_EQ(ParseBound("throughput < -10%").status().message(),
            "--fail-if 'throughput < -10%': unknown figure \"throughput\"; key figures: "
            "training_throughput, step_time, dataloader_share, peak_memory, energy_per_sample, "
            "gpu_utilization, step_time_median, or SECTION.METRIC");
  EXPECT_EQ(ParseBound("peak_memory = 1%").status().message(),
            "--fail-if 'peak_memory = 1%': expected FIGURE OP BOUND, e.g. "
            "'training_throughput < -10%'");
  EXPECT_FALSE(ParseBound("peak_memory > lots").ok());
  EXPECT_FALSE(ParseBound("peak_memory > 1%%").ok());
}

TEST(CompareTest, GateFailsAPlantedSlowdownAndPassesARerun) {
  std::vector<Bound> bounds = {*ParseBound("training_throughput < -10%"),
                               *ParseBound("peak_memory > +1%")};
  auto slow = BuildCompareReport(
      {Loaded("base", ProfileReport(1000, 1e9)), Loaded("slow", ProfileReport(800, 1e9))}, bounds);
  ASSERT_TRUE(slow.ok()) << slow.status().message();
  EXPECT_TRUE(slow->gate_failed());
  const report::Section* gate = slow->report.FindSection("gate");
  ASSERT_NE(gate, nullptr);
  ASSERT_EQ(gate->findings.size(), 1u);
  EXPECT_NE(gate->findings[0].text.find("training_throughput < -10%"), std::string::npos);
  EXPECT_EQ(std::get<std::string>(gate->tables[0].rows[0].back()), "CROSSED");
  EXPECT_DOUBLE_EQ(std::get<double>(gate->tables[0].rows[0][5]), -20.0);
  EXPECT_EQ(std::get<std::string>(gate->tables[0].rows[1].back()), "ok");

  auto same = BuildCompareReport(
      {Loaded("base", ProfileReport(1000, 1e9)), Loaded("rerun", ProfileReport(1000, 1e9))},
      bounds);
  ASSERT_TRUE(same.ok());
  EXPECT_FALSE(same->gate_failed());

  // Memory up 2 %: the second bound fails alone.
  auto fat = BuildCompareReport(
      {Loaded("base", ProfileReport(1000, 1e9)), Loaded("fat", ProfileReport(1000, 1.02e9))},
      bounds);
  ASSERT_TRUE(fat.ok());
  EXPECT_TRUE(fat->gate_failed());
}

TEST(CompareTest, DifferentKindsCompareWhatTheyShare) {
  report::Report analyze;
  analyze.kind = "analyze";
  analyze.AddSection("overview", "Overview")
      .AddMetric("avg_step_time_s", "Average step time", 0.05, Unit::kSeconds);
  std::vector<LoadedRun> runs = {Loaded("p", ProfileReport(1000, 1e9)), Loaded("a", analyze)};
  auto cmp = BuildCompareReport(runs, {});
  ASSERT_TRUE(cmp.ok());
  // The first section warns that a profile run and an analyze run measure different things.
  const report::Section& setup = cmp->report.sections.front();
  EXPECT_EQ(setup.id, "setup");
  ASSERT_EQ(setup.findings.size(), 1u);
  EXPECT_EQ(setup.findings[0].severity, report::Severity::kWarning);
  EXPECT_NE(setup.findings[0].text.find("A is profile and B analyze"), std::string::npos);
  ASSERT_EQ(cmp->warnings.size(), 1u);
  const report::Section* rs = cmp->report.FindSection("runs");
  ASSERT_NE(rs, nullptr);
  ASSERT_EQ(rs->notes.size(), 2u);
  EXPECT_EQ(rs->notes[0], "sections only some runs have, present in A: speed");
  EXPECT_EQ(rs->notes[1], "sections only some runs have, present in B: overview");
  // Step time is shared: A's 64 ms against B's 50 ms.
  const report::Table& k = cmp->report.FindSection("key_figures")->tables[0];
  bool found = false;
  for (const auto& row : k.rows) {
    if (std::get<std::string>(row[0]) != "Step time (mean)") continue;
    found = true;
    EXPECT_DOUBLE_EQ(std::get<double>(row[2]), 0.064);
    EXPECT_DOUBLE_EQ(std::get<double>(row[3]), 0.05);
  }
  EXPECT_TRUE(found);
  // A bound on a figure the analyze run lacks is an error, not a pass.
  auto gated = BuildCompareReport(runs, {*ParseBound("training_throughput < -10%")});
  ASSERT_FALSE(gated.ok());
  EXPECT_EQ(gated.status().message(),
            "--fail-if 'training_throughput < -10%': run a (kind analyze, in /runs/a) has no value "
            "for training_throughput");
}

}  // namespace
}  // namespace trainprof::history
