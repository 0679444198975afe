#include "report/tensorboard_export.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

#include "report/packed_rows.h"
#include "util/golden.h"

namespace trainprof::report {
namespace {

namespace fs = std::filesystem;

// --- A reader written from the record format, independent of the writer. ---

// CRC-32C bit by bit (no table), so the writer's table is checked against a second derivation.
uint32_t BitwiseCrc32c(std::string_view data) {
  uint32_t crc = 0xFFFFFFFFu;
  for (char ch : data) {
    crc ^= static_cast<uint8_t>(ch);
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
  }
  return ~crc;
}

uint32_t Masked(std::string_view data) {
  const uint32_t crc = BitwiseCrc32c(data);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

uint64_t LittleEndian(std::string_view bytes) {
  uint64_t v = 0;
  for (size_t i = bytes.size(); i-- > 0;) v = (v << 8) | static_cast<uint8_t>(bytes[i]);
  return v;
}

// Splits a TFRecord file into its records, checking both CRCs of every record.
::testing::AssertionResult ReadRecords(std::string_view file, std::vector<std::string>* out) {
  size_t at = 0, index = 0;
  for (; at < file.size(); ++index) {
    if (file.size() - at < 12) return ::testing::AssertionFailure() << "truncated header";
    const std::string_view length = file.substr(at, 8);
    if (LittleEndian(file.substr(at + 8, 4)) != Masked(length))
      return ::testing::AssertionFailure() << "length CRC of record " << index;
    const uint64_t n = LittleEndian(length);
    if (file.size() - at - 12 < n + 4) return ::testing::AssertionFailure() << "truncated data";
    const std::string_view data = file.substr(at + 12, n);
    if (LittleEndian(file.substr(at + 12 + n, 4)) != Masked(data))
      return ::testing::AssertionFailure() << "data CRC of record " << index;
    out->emplace_back(data);
    at += 12 + n + 4;
  }
  return ::testing::AssertionSuccess();
}

// --- A minimal protobuf decoder: the fields of one message. ---

struct Field {
  int number = 0;
  int wire = 0;
  uint64_t number_value = 0;  // varint, fixed64 or fixed32
  std::string_view bytes;     // length-delimited
};

bool ReadVarint(std::string_view& in, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift < 64 && !in.empty(); shift += 7) {
    const auto b = static_cast<uint8_t>(in[0]);
    in.remove_prefix(1);
    *v |= static_cast<uint64_t>(b & 0x7F) << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

std::vector<Field> Fields(std::string_view in) {
  std::vector<Field> out;
  uint64_t key = 0;
  while (!in.empty() && ReadVarint(in, &key)) {
    Field f{static_cast<int>(key >> 3), static_cast<int>(key & 7)};
    const size_t fixed = f.wire == 1 ? 8 : f.wire == 5 ? 4 : 0;
    if (f.wire == 0 && !ReadVarint(in, &f.number_value)) break;
    if (fixed > 0) {
      if (in.size() < fixed) break;
      f.number_value = LittleEndian(in.substr(0, fixed));
      in.remove_prefix(fixed);
    }
    if (f.wire == 2) {
      uint64_t n = 0;
      if (!ReadVarint(in, &n) || n > in.size()) break;
      f.bytes = in.substr(0, n);
      in.remove_prefix(n);
    }
    out.push_back(f);
  }
  EXPECT_TRUE(in.empty()) << "undecodable protobuf bytes";
  return out;
}

struct SummaryValue {
  std::string tag;
  std::optional<float> simple_value;
  std::string plugin_name;           // metadata.plugin_data.plugin_name
  int64_t dtype = 0;                 // tensor.dtype
  std::vector<std::string> strings;  // tensor.string_val
};

struct Event {
  double wall_time = 0;
  int64_t step = -1;
  std::string file_version;
  std::vector<SummaryValue> values;
};

void DecodeTensor(std::string_view bytes, SummaryValue& v) {
  for (const Field& f : Fields(bytes)) {
    if (f.number == 1) v.dtype = static_cast<int64_t>(f.number_value);
    if (f.number == 8) v.strings.emplace_back(f.bytes);
  }
}

void DecodeMetadata(std::string_view bytes, SummaryValue& v) {
  for (const Field& meta : Fields(bytes)) {
    if (meta.number != 1) continue;  // plugin_data
    for (const Field& plugin : Fields(meta.bytes))
      if (plugin.number == 1) v.plugin_name = plugin.bytes;
  }
}

SummaryValue DecodeValue(std::string_view bytes) {
  SummaryValue v;
  for (const Field& f : Fields(bytes)) {
    if (f.number == 1) v.tag = f.bytes;
    if (f.number == 2 && f.wire == 5) {
      const auto bits = static_cast<uint32_t>(f.number_value);
      float x = 0;
      std::memcpy(&x, &bits, sizeof x);
      v.simple_value = x;
    }
    if (f.number == 8) DecodeTensor(f.bytes, v);
    if (f.number == 9) DecodeMetadata(f.bytes, v);
  }
  return v;
}

Event DecodeEvent(std::string_view bytes) {
  Event e;
  for (const Field& f : Fields(bytes)) {
    if (f.number == 1 && f.wire == 1) std::memcpy(&e.wall_time, &f.number_value, 8);
    if (f.number == 2 && f.wire == 0) e.step = static_cast<int64_t>(f.number_value);
    if (f.number == 3) e.file_version = f.bytes;
    if (f.number == 5) {
      for (const Field& value : Fields(f.bytes))
        if (value.number == 1) e.values.push_back(DecodeValue(value.bytes));
    }
  }
  return e;
}

// The one event file in `logdir`.
std::string EventFilePath(const std::string& logdir) {
  std::vector<std::string> found;
  for (const auto& entry : fs::directory_iterator(logdir)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with("events.out.tfevents.") && name.ends_with(".trainprof"))
      found.push_back(entry.path().string());
  }
  EXPECT_EQ(found.size(), 1u);
  return found.empty() ? "" : found[0];
}

std::vector<Event> ReadEvents(const std::string& logdir) {
  std::vector<std::string> records;
  EXPECT_TRUE(ReadRecords(testutil::ReadText(EventFilePath(logdir)), &records));
  std::vector<Event> events;
  for (const std::string& r : records) events.push_back(DecodeEvent(r));
  return events;
}

// Every (step, value, wall_time) of `tag`.
struct Point {
  int64_t step;
  float value;
  double wall_time;
};
std::vector<Point> Scalars(const std::vector<Event>& events, const std::string& tag) {
  std::vector<Point> out;
  for (const Event& e : events)
    for (const SummaryValue& v : e.values)
      if (v.tag == tag && v.simple_value) out.push_back({e.step, *v.simple_value, e.wall_time});
  return out;
}

// --- A generated run whose answers are known exactly. ---

constexpr double kStart = 1795620994;  // 2026-11-25T15:36:34Z

void AddRateTable(Section& speed, const std::string& id, int steps, double first_time) {
  Table& t = speed.AddTable(id, id,
                            {{"step", "Step", Unit::kCount},
                             {"epoch", "Epoch", Unit::kCount},
                             {"time_s", "Time", Unit::kSeconds},
                             {"batches_per_s", "Batches/s", Unit::kPerSecond},
                             {"samples_per_s", "Samples/s", Unit::kPerSecond},
                             {"data_wait_s", "Data wait", Unit::kSeconds}},
                            TableKind::kSeries);
  for (int i = 0; i < steps; ++i) {
    t.rows.push_back(
        {int64_t{i}, int64_t{0}, first_time + 0.25 * i, 10.0 + i, 64 * (10.0 + i) + 0.5, 0.001});
  }
}

Report ProfileReport() {
  Report r;
  r.title = "trainprof report: tb-test";
  r.AddMeta("created_utc", std::string("2026-11-25T15:36:34Z"));
  r.AddSection("time", "Time report").AddMetric("wall_time_s", "Wall time", 2.5, Unit::kSeconds);
  Section& speed = r.AddSection("speed", "Speed report");
  speed.AddMetric("training_avg_throughput", "Training", 412.25, Unit::kPerSecond);
  speed.AddMetric("device", "Device", std::string("cpu"), Unit::kText);  // not numeric: skipped
  AddRateTable(speed, "training_rate", 5, 0.5);
  AddRateTable(speed, "validation_rate", 3, 2.0);
  Table& sys = r.AddSection("system", "System")
                   .AddTable("system_timeseries", "System",
                             {{"time_s", "Time", Unit::kSeconds},
                              {"cpu_utilization_percent", "CPU", Unit::kPercent},
                              {"process_rss_bytes", "RSS", Unit::kBytes}},
                             TableKind::kSeries);
  sys.rows.push_back({1.0, 50.0, int64_t{1000}});
  sys.rows.push_back({2.0, 75.0, int64_t{2000}});
  return r;
}

// <tmp>/run holding summary.txt with `text`.
std::string RunDirWithSummary(const std::string& tmp, const std::string& text) {
  const std::string dir = tmp + "/run";
  fs::create_directories(dir);
  std::ofstream(dir + "/summary.txt") << text;
  return dir;
}

TEST(TensorBoardExportTest, Crc32cMatchesKnownVectors) {
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(Crc32c(""), 0u);
  EXPECT_EQ(Crc32c(std::string(32, '\0')), 0x8A9136AAu);  // RFC 3720 B.4
  EXPECT_EQ(Crc32c(std::string(32, '\xFF')), 0x62A8AB43u);
  std::string up, down;
  for (int i = 0; i < 32; ++i)
    up.push_back(static_cast<char>(i)), down.push_back(static_cast<char>(31 - i));
  EXPECT_EQ(Crc32c(up), 0x46DD794Eu);
  EXPECT_EQ(Crc32c(down), 0x113FDB5Cu);
  std::string noise;
  for (uint32_t i = 0, x = 1; i < 1000; ++i, x = x * 1103515245u + 12345u) {
    noise.push_back(static_cast<char>(x >> 16));
    ASSERT_EQ(Crc32c(noise), BitwiseCrc32c(noise)) << "length " << noise.size();
  }
  EXPECT_EQ(MaskCrc32c(0), 0xa282ead8u);
  EXPECT_EQ(MaskCrc32c(Crc32c("123456789")), Masked("123456789"));
}

TEST(TensorBoardExportTest, ParsesCreatedUtc) {
  EXPECT_EQ(ParseUtcIso8601("1970-01-01T00:00:00Z"), 0.0);
  EXPECT_EQ(ParseUtcIso8601("2026-11-25T15:36:34Z"), kStart);
  EXPECT_DOUBLE_EQ(*ParseUtcIso8601("2026-11-25T15:36:34.25Z"), kStart + 0.25);
  EXPECT_EQ(ParseUtcIso8601("2026-11-25T17:36:34+02:00"), kStart);
  EXPECT_EQ(ParseUtcIso8601("2026-11-25 15:36:34"), std::nullopt);
  EXPECT_EQ(ParseUtcIso8601("2026-02-30T00:00:00Z"), std::nullopt);
  EXPECT_EQ(ParseUtcIso8601(""), std::nullopt);
}

TEST(TensorBoardExportTest, WritesRatesMetricsSystemSeriesAndSummary) {
  const Report r = ProfileReport();
  const std::string tmp = testutil::FreshTempDir();
  const std::string run_dir =
      RunDirWithSummary(tmp, "trainprof report: tb-test\nWall time  2.5 s\n");
  const std::string logdir = tmp + "/tb/new";  // created by the export
  ASSERT_TRUE(WriteTensorBoardEvents(r, run_dir, logdir).ok());
  const std::vector<Event> events = ReadEvents(logdir);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events[0].file_version, "brain.Event:2");
  EXPECT_EQ(events[0].wall_time, kStart);

  const Table& rows = *r.FindSection("speed")->FindTable("training_rate");
  const std::vector<Point> rate = Scalars(events, "training_rate");
  ASSERT_EQ(rate.size(), rows.rows.size());
  for (size_t i = 0; i < rate.size(); ++i) {
    EXPECT_EQ(rate[i].step, std::get<int64_t>(rows.rows[i][0]));
    EXPECT_FLOAT_EQ(rate[i].value, static_cast<float>(std::get<double>(rows.rows[i][4])));
    EXPECT_DOUBLE_EQ(rate[i].wall_time, kStart + std::get<double>(rows.rows[i][2]));
  }
  const std::vector<Point> step_time = Scalars(events, "training_step_time_s");
  ASSERT_EQ(step_time.size(), 5u);
  EXPECT_FLOAT_EQ(step_time[2].value, 1.0f / 12.0f);
  ASSERT_EQ(Scalars(events, "validation_rate").size(), 3u);
  EXPECT_FLOAT_EQ(Scalars(events, "validation_rate")[2].value, 64 * 12.0f + 0.5f);
  EXPECT_EQ(Scalars(events, "validation_step_time_s").size(), 3u);

  const std::vector<Point> metric = Scalars(events, "speed/training_avg_throughput");
  ASSERT_EQ(metric.size(), 1u);
  EXPECT_EQ(metric[0].step, 0);
  EXPECT_FLOAT_EQ(metric[0].value, 412.25f);
  EXPECT_EQ(Scalars(events, "time/wall_time_s").size(), 1u);
  EXPECT_TRUE(Scalars(events, "speed/device").empty());

  const std::vector<Point> cpu = Scalars(events, "system/cpu_utilization_percent");
  ASSERT_EQ(cpu.size(), 2u);
  EXPECT_EQ(cpu[1].step, 1);
  EXPECT_FLOAT_EQ(cpu[1].value, 75.0f);
  EXPECT_DOUBLE_EQ(cpu[1].wall_time, kStart + 2.0);
  EXPECT_FLOAT_EQ(Scalars(events, "system/process_rss_bytes")[0].value, 1000.0f);
  EXPECT_TRUE(Scalars(events, "system/time_s").empty());

  int texts = 0;
  for (const Event& e : events) {
    for (const SummaryValue& v : e.values) {
      if (v.tag != "summary") continue;
      ++texts;
      EXPECT_EQ(v.plugin_name, "text");
      EXPECT_EQ(v.dtype, 7);  // DT_STRING
      ASSERT_EQ(v.strings.size(), 1u);
      EXPECT_EQ(v.strings[0], "```\ntrainprof report: tb-test\nWall time  2.5 s\n```\n");
    }
  }
  EXPECT_EQ(texts, 1);
}

// An analyze report's per-step table, empty.
Table& StepTable(Report& r) {
  r.kind = "analyze";
  return r.AddSection("overview", "Overview")
      .AddTable("step_breakdown", "Steps",
                {{"rank", "Rank", Unit::kText},
                 {"step", "Step", Unit::kText},
                 {"step_time_s", "Step time", Unit::kSeconds},
                 {"kernel_s", "Kernels", Unit::kSeconds}});
}

// The events of `r` exported to a fresh log dir.
std::vector<Event> Exported(const Report& r) {
  const std::string logdir = testutil::FreshTempDir() + "/tb";
  EXPECT_TRUE(WriteTensorBoardEvents(r, "", logdir).ok());
  return ReadEvents(logdir);
}

class AnalyzeStepTimes : public ::testing::TestWithParam<bool> {};

// Two ranks' steps, held or (as many ranks' are) in their CSV only, packed.
TEST_P(AnalyzeStepTimes, PerStepAndRank) {
  Report r;
  Table& t = StepTable(r);
  t.rows.push_back({std::string("0"), std::string("ProfilerStep#1009"), 0.075, 0.045});
  t.rows.push_back({std::string("0"), std::string("ProfilerStep#1010"), 0.077, 0.047});
  t.rows.push_back({std::string("1"), std::string("ProfilerStep#1009"), 0.080, 0.040});
  if (GetParam()) t.KeepInCsvOnly(), PackRows(t);
  const std::vector<Event> events = Exported(r);
  const std::vector<Point> rank0 = Scalars(events, "rank0/step_time_s");
  ASSERT_EQ(rank0.size(), 2u);
  EXPECT_EQ(rank0[0].step, 1009);
  EXPECT_EQ(rank0[1].step, 1010);
  EXPECT_FLOAT_EQ(rank0[1].value, 0.077f);
  ASSERT_EQ(Scalars(events, "rank1/step_time_s").size(), 1u);
  EXPECT_FLOAT_EQ(Scalars(events, "rank1/step_breakdown/kernel_s")[0].value, 0.040f);
  for (const Event& e : events)  // no created_utc: the time of the export
    EXPECT_GT(e.wall_time, kStart - 86400 * 365);
}

INSTANTIATE_TEST_SUITE_P(HeldOrInCsvOnly, AnalyzeStepTimes, ::testing::Bool());

// Ten ranks: a curve per figure, its mean over the ranks, not one per rank and figure.
TEST(TensorBoardExportTest, ManyRanksStepTimesAreTheirMean) {
  Report r;
  Table& t = StepTable(r);
  for (int rank = 0; rank < 10; ++rank)
    for (int step : {7, 8})
      t.rows.push_back({std::to_string(rank), "ProfilerStep#" + std::to_string(step),
                        0.100 + 0.010 * rank + (step == 8 ? 0.5 : 0.0), 0.050});
  const std::vector<Event> events = Exported(r);
  const std::vector<Point> mean = Scalars(events, "ranks_mean/step_time_s");
  ASSERT_EQ(mean.size(), 2u);
  EXPECT_EQ(mean[0].step, 7);
  EXPECT_FLOAT_EQ(mean[0].value, 0.145f);
  EXPECT_FLOAT_EQ(mean[1].value, 0.645f);
  EXPECT_EQ(Scalars(events, "ranks_mean/step_breakdown/kernel_s").size(), 2u);
  EXPECT_TRUE(Scalars(events, "rank0/step_time_s").empty());
}

TEST(TensorBoardExportTest, PooledRepeatsGetACurveEach) {
  Report r;
  AddRateTable(r.AddSection("speed", "Speed"), "training_rate", 2, 0.5);
  Table& t = r.sections[0].tables[0];
  t.columns.push_back({"repeat", "Repeat", Unit::kCount});
  t.rows[0].push_back(int64_t{1});
  t.rows[1].push_back(int64_t{2});
  const std::string logdir = testutil::FreshTempDir() + "/tb";
  ASSERT_TRUE(WriteTensorBoardEvents(r, "", logdir).ok());
  const std::vector<Event> events = ReadEvents(logdir);
  EXPECT_EQ(Scalars(events, "training_rate/repeat1").size(), 1u);
  EXPECT_EQ(Scalars(events, "training_rate/repeat2").size(), 1u);
  EXPECT_TRUE(Scalars(events, "training_rate").empty());
}

TEST(TensorBoardExportTest, ReaderRejectsACorruptedByte) {
  const std::string logdir = testutil::FreshTempDir() + "/tb";
  ASSERT_TRUE(WriteTensorBoardEvents(ProfileReport(), "", logdir).ok());
  const std::string good = testutil::ReadText(EventFilePath(logdir));
  std::vector<std::string> records;
  ASSERT_TRUE(ReadRecords(good, &records));
  const size_t second = 12 + records[0].size() + 4;  // where the second record starts
  for (size_t at : {second + 1, second + 12 + 3, good.size() - 1}) {
    std::string bad = good;
    bad[at] = static_cast<char>(bad[at] ^ 0x10);
    std::vector<std::string> ignored;
    EXPECT_FALSE(ReadRecords(bad, &ignored)) << "byte " << at;
  }
}

TEST(TensorBoardExportTest, RunWithoutSummaryHasNoTextPanel) {
  const std::string tmp = testutil::FreshTempDir();
  fs::create_directories(tmp + "/run");
  ASSERT_TRUE(WriteTensorBoardEvents(ProfileReport(), tmp + "/run", tmp + "/tb").ok());
  const std::string logdir = tmp + "/tb";
  for (const Event& e : ReadEvents(logdir))
    for (const SummaryValue& v : e.values) EXPECT_NE(v.tag, "summary");
}

TEST(TensorBoardExportTest, SummaryWithBackticksGetsALongerFence) {
  const std::string tmp = testutil::FreshTempDir();
  const std::string run_dir = RunDirWithSummary(tmp, "see ```code```\n");
  const std::string logdir = tmp + "/tb";
  ASSERT_TRUE(WriteTensorBoardEvents(Report(), run_dir, logdir).ok());
  std::string text;
  for (const Event& e : ReadEvents(logdir))
    for (const SummaryValue& v : e.values)
      if (v.tag == "summary" && !v.strings.empty()) text = v.strings[0];
  EXPECT_EQ(text, "````\nsee ```code```\n````\n");
}

TEST(TensorBoardExportTest, LogdirThatCannotBeCreatedNamesThePath) {
  const std::string file = testutil::FreshTempDir() + "/plain-file";
  std::ofstream(file) << "x";
  const Status s = WriteTensorBoardEvents(ProfileReport(), "", file + "/tb");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(file + "/tb"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace trainprof::report
