#include "report/mlflow_export.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "util/golden.h"

namespace trainprof::report {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kStartMs = 1795620994000;  // 2026-11-25T15:36:34Z

// --- Reading the store back, file by file. ---

// The `key: value` lines of a meta.yaml, values without their YAML quotes.
std::map<std::string, std::string> ReadMeta(const std::string& path) {
  std::map<std::string, std::string> out;
  std::istringstream in(testutil::ReadText(path));
  for (std::string line; std::getline(in, line);) {
    const size_t colon = line.find(": ");
    if (colon == std::string::npos) continue;
    std::string v = line.substr(colon + 2);
    if (v.size() >= 2 && v.front() == '\'' && v.back() == '\'') v = v.substr(1, v.size() - 2);
    out[line.substr(0, colon)] = v;
  }
  return out;
}

std::set<std::string> Names(const std::string& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

// "file://" and the path without doubled slashes (the temp folder's name has only safe
// characters, so nothing is percent-encoded).
std::string FileUri(const std::string& path) {
  return "file://" + fs::path(path).lexically_normal().string();
}

struct MetricPoint {
  int64_t timestamp;
  double value;
  int64_t step;
};

// A metric file: each line exactly "<timestamp> <value> <step>".
std::vector<MetricPoint> ReadMetric(const std::string& path) {
  std::vector<MetricPoint> out;
  std::istringstream in(testutil::ReadText(path));
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    MetricPoint p{};
    std::string extra;
    EXPECT_TRUE(fields >> p.timestamp >> p.value >> p.step) << path << ": " << line;
    EXPECT_FALSE(fields >> extra) << path << ": " << line;
    out.push_back(p);
  }
  return out;
}

// --- A generated run whose answers are known exactly. ---

void AddRates(Section& speed, const std::string& id, int steps) {
  Table& t = speed.AddTable(id, id,
                            {{"step", "Step", Unit::kCount},
                             {"time_s", "Time", Unit::kSeconds},
                             {"batches_per_s", "Batches/s", Unit::kPerSecond},
                             {"samples_per_s", "Samples/s", Unit::kPerSecond}},
                            TableKind::kSeries);
  for (int i = 0; i < steps; ++i)
    t.rows.push_back({int64_t{i}, 0.5 + 0.25 * i, 10.0 + i, 64 * (10.0 + i) + 0.125});
}

// A profile run in <tmp>/<name>, its report files written there too.
Report MakeRun(const std::string& run_dir, const std::string& name = "mnist") {
  Report r;
  r.title = "trainprof report: " + name;
  r.AddMeta("created_utc", std::string("2026-11-25T15:36:34Z"));
  r.AddMeta("run_dir", run_dir);
  r.config = {{"output.name", std::string(name)},
              {"training.batch_size", int64_t{64}},
              {"training.learning_rate", 0.001},
              {"time.verbose", false},
              {"data.dir/sub", std::string("/data/x")}};
  r.AddSection("time", "Time").AddMetric("wall_time_s", "Wall time", 2.5, Unit::kSeconds);
  Section& speed = r.AddSection("speed", "Speed");
  speed.AddMetric("training_avg_throughput", "Training", 412.25, Unit::kPerSecond);
  speed.AddMetric("steps", "Steps", int64_t{4}, Unit::kCount);
  speed.AddMetric("device", "Device", std::string("cpu"), Unit::kText);
  AddRates(speed, "training_rate", 4);
  AddRates(speed, "validation_rate", 2);
  fs::create_directories(run_dir + "/rank1");
  for (const char* f : {"report.json", "summary.txt", "report.html", "time_report.csv",
                        "model_summary.txt", "trace.json", "notes.md", "rank1/report.json"})
    std::ofstream(run_dir + "/" + f) << "contents of " << f;
  return r;
}

TEST(MlflowExportTest, WritesTheRunFileByFile) {
  const std::string tmp = testutil::FreshTempDir(), store = tmp + "/mlruns";
  const std::string run_dir = tmp + "/20261125T153634Z-mnist";
  const Report r = MakeRun(run_dir);
  StatusOr<std::string> id = WriteMlflowRun(r, run_dir, {.store = store});
  ASSERT_TRUE(id.ok()) << id.status().message();
  EXPECT_EQ(id->size(), 32u);
  EXPECT_EQ(id->find_first_not_of("0123456789abcdef"), std::string::npos) << *id;
  EXPECT_EQ(*id, MlflowRunId(r, run_dir));

  // A new store as MLflow makes one: .trash, Default (0), and ours as 1.
  EXPECT_EQ(Names(store), (std::set<std::string>{".trash", "0", "1"}));
  EXPECT_EQ(ReadMeta(store + "/0/meta.yaml")["name"], "Default");
  auto exp = ReadMeta(store + "/1/meta.yaml");
  EXPECT_EQ(exp["artifact_location"], FileUri(store + "/1"));
  EXPECT_EQ(exp["experiment_id"], "1");
  EXPECT_NE(testutil::ReadText(store + "/1/meta.yaml").find("experiment_id: '1'\n"),
            std::string::npos);
  EXPECT_EQ(exp["lifecycle_stage"], "active");
  EXPECT_EQ(exp["name"], "mnist");
  EXPECT_GT(std::stoll(exp["creation_time"]), kStartMs - 86400000LL * 365);
  EXPECT_EQ(exp["last_update_time"], exp["creation_time"]);
  EXPECT_EQ(Names(store + "/1"), (std::set<std::string>{"meta.yaml", *id}));

  const std::string run = store + "/1/" + *id;
  EXPECT_EQ(Names(run),
            (std::set<std::string>{"meta.yaml", "metrics", "params", "tags", "artifacts"}));
  auto meta = ReadMeta(run + "/meta.yaml");
  EXPECT_EQ(meta.size(), 15u);
  EXPECT_EQ(meta["artifact_uri"], FileUri(run + "/artifacts"));
  EXPECT_EQ(meta["start_time"], std::to_string(kStartMs));
  EXPECT_EQ(meta["end_time"], std::to_string(kStartMs + 2500));
  EXPECT_EQ(meta["entry_point_name"], "");
  EXPECT_EQ(meta["experiment_id"], "1");
  EXPECT_EQ(meta["lifecycle_stage"], "active");
  EXPECT_EQ(meta["run_id"], *id);
  EXPECT_EQ(meta["run_uuid"], *id);
  EXPECT_EQ(meta["run_name"], "20261125T153634Z-mnist");
  EXPECT_EQ(meta["source_type"], "4");
  EXPECT_EQ(meta["status"], "3");
  EXPECT_EQ(meta["tags"], "[]");
  EXPECT_FALSE(meta["user_id"].empty());

  // Metrics: headline figures at step 0, the rates per step at start + time_s.
  EXPECT_EQ(Names(run + "/metrics"),
            (std::set<std::string>{"time.wall_time_s", "speed.training_avg_throughput",
                                   "speed.steps", "training_rate", "validation_rate"}));
  const auto wall = ReadMetric(run + "/metrics/time.wall_time_s");
  ASSERT_EQ(wall.size(), 1u);
  EXPECT_EQ(wall[0].timestamp, kStartMs);
  EXPECT_EQ(wall[0].value, 2.5);
  EXPECT_EQ(wall[0].step, 0);
  EXPECT_EQ(ReadMetric(run + "/metrics/speed.steps")[0].value, 4);
  const Table& rows = *r.FindSection("speed")->FindTable("training_rate");
  const auto rate = ReadMetric(run + "/metrics/training_rate");
  ASSERT_EQ(rate.size(), rows.rows.size());
  for (size_t i = 0; i < rate.size(); ++i) {
    EXPECT_EQ(rate[i].step, std::get<int64_t>(rows.rows[i][0]));
    EXPECT_EQ(rate[i].value, std::get<double>(rows.rows[i][3]));  // exact: shortest round trip
    EXPECT_EQ(rate[i].timestamp, kStartMs + 500 + 250 * static_cast<int64_t>(i));
  }
  EXPECT_EQ(ReadMetric(run + "/metrics/validation_rate").size(), 2u);

  // Params: the config, one file per dotted key ('/' as '.'), values as text.
  EXPECT_EQ(Names(run + "/params"),
            (std::set<std::string>{"output.name", "training.batch_size", "training.learning_rate",
                                   "time.verbose", "data.dir.sub"}));
  EXPECT_EQ(testutil::ReadText(run + "/params/training.batch_size"), "64");
  EXPECT_EQ(testutil::ReadText(run + "/params/training.learning_rate"), "0.001");
  EXPECT_EQ(testutil::ReadText(run + "/params/time.verbose"), "false");
  EXPECT_EQ(testutil::ReadText(run + "/params/data.dir.sub"), "/data/x");

  EXPECT_EQ(testutil::ReadText(run + "/tags/mlflow.runName"), "20261125T153634Z-mnist");
  EXPECT_EQ(testutil::ReadText(run + "/tags/mlflow.source.name"), "trainprof");
  EXPECT_EQ(testutil::ReadText(run + "/tags/trainprof.kind"), "profile");
  EXPECT_EQ(testutil::ReadText(run + "/tags/trainprof.run_dir"), run_dir);

  // Artifacts: the report files at the top of the run folder, not notes or sub-folders.
  EXPECT_EQ(Names(run + "/artifacts"),
            (std::set<std::string>{"report.json", "summary.txt", "report.html", "time_report.csv",
                                   "model_summary.txt", "trace.json"}));
  EXPECT_EQ(testutil::ReadText(run + "/artifacts/report.json"), "contents of report.json");
}

TEST(MlflowExportTest, ASecondRunJoinsTheExperiment) {
  const std::string tmp = testutil::FreshTempDir(), store = tmp + "/mlruns";
  StatusOr<std::string> a = WriteMlflowRun(MakeRun(tmp + "/a"), tmp + "/a", {.store = store});
  StatusOr<std::string> b = WriteMlflowRun(MakeRun(tmp + "/b"), tmp + "/b", {.store = store});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(*a, *b);
  EXPECT_EQ(Names(store), (std::set<std::string>{".trash", "0", "1"}));
  EXPECT_EQ(Names(store + "/1"), (std::set<std::string>{"meta.yaml", *a, *b}));
  EXPECT_EQ(ReadMeta(store + "/1/" + *b + "/meta.yaml")["experiment_id"], "1");
}

TEST(MlflowExportTest, AnotherExperimentGetsTheNextId) {
  const std::string tmp = testutil::FreshTempDir(), store = tmp + "/mlruns";
  ASSERT_TRUE(WriteMlflowRun(MakeRun(tmp + "/a"), tmp + "/a", {.store = store}).ok());
  StatusOr<std::string> b =
      WriteMlflowRun(MakeRun(tmp + "/b"), tmp + "/b", {.store = store, .experiment = "sweep 2"});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(ReadMeta(store + "/2/meta.yaml")["name"], "sweep 2");
  EXPECT_EQ(ReadMeta(store + "/2/meta.yaml")["experiment_id"], "2");
  EXPECT_TRUE(fs::exists(store + "/2/" + *b + "/meta.yaml"));
  // No experiment named: the run's output.name, else its title.
  Report untitled = MakeRun(tmp + "/c", "cifar");
  untitled.config.clear();
  ASSERT_TRUE(WriteMlflowRun(untitled, tmp + "/c", {.store = store}).ok());
  EXPECT_EQ(ReadMeta(store + "/3/meta.yaml")["name"], "trainprof report: cifar");
}

TEST(MlflowExportTest, TheSameRunTwiceIsRefusedUnlessReplaced) {
  const std::string tmp = testutil::FreshTempDir(), store = tmp + "/mlruns";
  const Report r = MakeRun(tmp + "/a");
  StatusOr<std::string> first = WriteMlflowRun(r, tmp + "/a", {.store = store});
  ASSERT_TRUE(first.ok());
  const std::string run = store + "/1/" + *first;
  std::ofstream(run + "/metrics/stale") << "1 2 3\n";
  StatusOr<std::string> again = WriteMlflowRun(r, tmp + "/a", {.store = store, .experiment = "x"});
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(again.status().message(),
            "already exported as run " + *first + " in " + store + "; --replace to write it again");
  EXPECT_FALSE(fs::exists(store + "/2"));  // refused before anything was written

  StatusOr<std::string> replaced = WriteMlflowRun(r, tmp + "/a", {.store = store, .replace = true});
  ASSERT_TRUE(replaced.ok()) << replaced.status().message();
  EXPECT_EQ(*replaced, *first);
  EXPECT_FALSE(fs::exists(run + "/metrics/stale"));
  EXPECT_TRUE(fs::exists(run + "/metrics/training_rate"));
  EXPECT_EQ(Names(store + "/1"), (std::set<std::string>{"meta.yaml", *first}));
}

// A store MLflow itself wrote (PyYAML's layout, its random experiment ids).
std::string WriteMlflowStore(const std::string& store) {
  fs::create_directories(store + "/.trash/906783375233873417");
  fs::create_directories(store + "/0");
  fs::create_directories(store + "/606783375233873416/1c6b2d5b909041df93e6e00b960de019");
  std::ofstream(store + "/0/meta.yaml")
      << "artifact_location: file:///x/mlruns/0\ncreation_time: 1721450907000\nexperiment_id: "
         "'0'\nlast_update_time: 1721450907000\nlifecycle_stage: active\nname: Default\n";
  const std::string meta =
      "artifact_location: file:///x/mlruns/606783375233873416\ncreation_time: 1721450907221\n"
      "experiment_id: '606783375233873416'\nlast_update_time: 1721450907221\n"
      "lifecycle_stage: active\nname: 'mnist: a ''long'' name that PyYAML folds onto the next\n"
      "  line'\n";
  std::ofstream(store + "/606783375233873416/meta.yaml") << meta;
  std::ofstream(store + "/606783375233873416/1c6b2d5b909041df93e6e00b960de019/meta.yaml") << "x";
  return meta;
}

TEST(MlflowExportTest, AnExistingStoreIsAppendedTo) {
  const std::string tmp = testutil::FreshTempDir(), store = tmp + "/mlruns";
  const std::string meta = WriteMlflowStore(store);
  const std::string name = "mnist: a 'long' name that PyYAML folds onto the next line";
  StatusOr<std::string> id =
      WriteMlflowRun(MakeRun(tmp + "/a"), tmp + "/a", {.store = store, .experiment = name});
  ASSERT_TRUE(id.ok()) << id.status().message();
  EXPECT_TRUE(fs::exists(store + "/606783375233873416/" + *id + "/meta.yaml"));
  EXPECT_EQ(testutil::ReadText(store + "/606783375233873416/meta.yaml"), meta);  // untouched
  EXPECT_EQ(testutil::ReadText(store + "/606783375233873416/1c6b2d5b909041df93e6e00b960de019/"
                                       "meta.yaml"),
            "x");
  // A new name: the next number after every experiment, deleted ones included.
  ASSERT_TRUE(WriteMlflowRun(MakeRun(tmp + "/b"), tmp + "/b", {.store = store}).ok());
  EXPECT_EQ(ReadMeta(store + "/906783375233873418/meta.yaml")["name"], "mnist");
}

TEST(MlflowExportTest, AnUnparsableExperimentIsAnErrorNamingIt) {
  const std::string tmp = testutil::FreshTempDir(), store = tmp + "/mlruns";
  fs::create_directories(store + "/7");
  std::ofstream(store + "/7/meta.yaml") << "{{ not: [yaml\n";
  StatusOr<std::string> id = WriteMlflowRun(MakeRun(tmp + "/a"), tmp + "/a", {.store = store});
  ASSERT_FALSE(id.ok());
  EXPECT_NE(id.status().message().find(store + "/7/meta.yaml"), std::string::npos)
      << id.status().message();
  std::ofstream(store + "/7/meta.yaml") << "lifecycle_stage: active\n";  // no name
  id = WriteMlflowRun(MakeRun(tmp + "/a"), tmp + "/a", {.store = store});
  ASSERT_FALSE(id.ok());
  EXPECT_NE(id.status().message().find(store + "/7/meta.yaml"), std::string::npos);
}

TEST(MlflowExportTest, AStoreThatCannotBeCreatedIsAnErrorNamingIt) {
  const std::string tmp = testutil::FreshTempDir();
  std::ofstream(tmp + "/file") << "x";
  StatusOr<std::string> id =
      WriteMlflowRun(MakeRun(tmp + "/a"), tmp + "/a", {.store = tmp + "/file/mlruns"});
  ASSERT_FALSE(id.ok());
  EXPECT_NE(id.status().message().find(tmp + "/file/mlruns"), std::string::npos)
      << id.status().message();
  id = WriteMlflowRun(MakeRun(tmp + "/a"), tmp + "/missing", {.store = tmp + "/mlruns"});
  ASSERT_FALSE(id.ok());
  EXPECT_NE(id.status().message().find(tmp + "/missing"), std::string::npos);
  EXPECT_EQ(Names(tmp + "/mlruns/1"), std::set<std::string>{"meta.yaml"});  // no half run left
}

}  // namespace
}  // namespace trainprof::report
