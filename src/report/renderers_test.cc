#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "report/csv.h"
#include "report/format.h"
#include "report/json.h"
#include "report/json_reader.h"
#include "report/json_value.h"
#include "report/terminal.h"
#include "util/golden.h"

namespace trainprof::report {
namespace {

// A report with every kind of content a renderer must handle.
Report SampleReport() {
  Report r;
  r.title = "trainprof report: sample";
  r.AddMeta("trainprof_version", std::string("0.1.0"));
  r.AddMeta("host.name", std::string("node-1"));
  r.AddMeta("host.cores", int64_t{2});
  r.AddMeta("pid", int64_t{4242}, /*in_terminal=*/false);
  r.config.emplace_back("time.verbose", false);
  r.config.emplace_back("training.learning_rate", 0.001);
  r.config.emplace_back("output.name", std::string("sample"));

  Section& run = r.AddSection("run", "Run");
  run.notes.push_back("stopped by Interrupt after 3 steps");

  Section& t = r.AddSection("time", "Time report");
  t.AddMetric("wall_time_s", "Wall time", 12.5, Unit::kSeconds);
  t.AddMetric("recorded_events", "Recorded scopes", int64_t{1234567}, Unit::kCount);
  t.AddMetric("nothing", "Not measured", Value(), Unit::kPerSecond, "batches/s");
  Table& tab = t.AddTable("time_report", "Time per action",
                          {{"action", "Action", Unit::kText},
                           {"calls", "Calls", Unit::kCount},
                           {"mean_s", "Mean", Unit::kSeconds},
                           {"pct", "% wall", Unit::kPercent},
                           {"bytes", "Memory", Unit::kBytes},
                           {"rate", "Rate", Unit::kPerSecond},
                           {"ok", "OK", Unit::kBool}});
  tab.rows.push_back({std::string("[Model].forward"), int64_t{300}, 0.0042, 33.333,
                      int64_t{3 << 20}, 1234.5, true});
  tab.rows.push_back(
      {std::string("a, \"quoted\" µ-name"), int64_t{2}, 1.5e-7, 0.05, int64_t{512}, 0.5, false});
  tab.rows.push_back({std::string("slow"), int64_t{1}, 754.0, 100.0, Value(), Value(), Value()});
  tab.footer.push_back(
      {std::string("Total"), int64_t{303}, Value(), 100.0, Value(), Value(), Value()});
  tab.notes.push_back("nested actions overlap");
  Table& series = t.AddTable("rate", "Throughput per step",
                             {{"step", "Step", Unit::kCount}, {"v", "Batches/s", Unit::kPerSecond}},
                             TableKind::kSeries);
  series.rows.push_back({int64_t{0}, 10.0});
  series.rows.push_back({int64_t{1}, 12.25});
  t.findings.push_back({Severity::kWarning, "the data loader is slow"});
  r.diagnostics.push_back({DiagnosticId::kDroppedEvents, 7, "thread 'x' dropped 7 events"});
  return r;
}

TEST(Format, HumanUnits) {
  EXPECT_EQ(FormatHuman(0.0123, Unit::kSeconds), "12.3 ms");
  EXPECT_EQ(FormatHuman(4.2e-8, Unit::kSeconds), "42.0 ns");
  EXPECT_EQ(FormatHuman(3.5e-5, Unit::kSeconds), "35.0 µs");
  EXPECT_EQ(FormatHuman(1.25, Unit::kSeconds), "1.25 s");
  EXPECT_EQ(FormatHuman(754.0, Unit::kSeconds), "12m 34s");
  EXPECT_EQ(FormatHuman(7384.0, Unit::kSeconds), "2h 03m");
  EXPECT_EQ(FormatHuman(int64_t{1234567}, Unit::kCount), "1,234,567");
  EXPECT_EQ(FormatHuman(int64_t{-1234}, Unit::kCount), "-1,234");
  EXPECT_EQ(FormatHuman(int64_t{1234567}, Unit::kId), "1234567");  // a PID names, not counts
  EXPECT_EQ(FormatHuman(2.0, Unit::kCount), "2");
  EXPECT_EQ(FormatHuman(2.5, Unit::kCount), "2.5");
  EXPECT_EQ(FormatHuman(int64_t{1536}, Unit::kBytes), "1.50 KiB");
  EXPECT_EQ(FormatHuman(int64_t{3} << 30, Unit::kBytes), "3.00 GiB");
  EXPECT_EQ(FormatHuman(12.345, Unit::kPercent), "12.3 %");
  EXPECT_EQ(FormatHuman(Value(), Unit::kSeconds), "-");
  EXPECT_EQ(FormatMachine(0.1), "0.1");
  EXPECT_EQ(FormatMachine(Value()), "");
}

// AppendShortest writes doubles made from integers (seconds from nanoseconds, counts) without
// fmt; its text must be fmt's "{}" to the byte, for those and for every other double.
std::string Shortest(double d) {
  std::string out;
  AppendShortest(out, d);
  return out;
}

TEST(Format, ShortestIsFmtsTextForEveryDouble) {
  const double cases[] = {1e-9,
                          1.5e-8,
                          1.2e-5,
                          1e-5,
                          9.9999e-5,
                          1e-4,
                          0.000123,
                          0.1,
                          0.25,
                          1,
                          42,
                          1.5,
                          123.456,
                          999999.999999999,
                          1e6,
                          1.5e10,
                          999999999999999,
                          1e15,
                          1e16,
                          1.5e17,
                          -2.5e-7,
                          -42,
                          0,
                          -0.0,
                          0.1 + 0.2,
                          1.0 / 3,
                          1e-300,
                          1e300,
                          5e-324,
                          2.2250738585072014e-308,
                          123456789.123456789};
  for (double d : cases) EXPECT_EQ(Shortest(d), fmt::format("{}", d)) << d;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200000; ++i) {
    const auto n = static_cast<int64_t>(rng() % 1000000000000000ULL) >> (rng() % 50);
    const double scaled[] = {static_cast<double>(n) / 1e9, static_cast<double>(n),
                             static_cast<double>(-n) / 1e9, static_cast<double>(n) / 1e6};
    for (double d : scaled) ASSERT_EQ(Shortest(d), fmt::format("{}", d)) << n;
    double any;  // any finite double, from its bits
    const uint64_t bits = rng();
    std::memcpy(&any, &bits, sizeof any);
    if (std::isfinite(any)) {
      ASSERT_EQ(Shortest(any), fmt::format("{}", any)) << bits;
    }
  }
}

TEST(Format, PhysicalUnits) {
  EXPECT_EQ(FormatHuman(2.5 * 1024 * 1024, Unit::kBytesPerSecond), "2.50 MiB/s");
  EXPECT_EQ(FormatHuman(287.4, Unit::kWatts), "287 W");
  EXPECT_EQ(FormatHuman(950.0, Unit::kJoules), "950 J");
  EXPECT_EQ(FormatHuman(12500.0, Unit::kJoules), "12.5 kJ");
  EXPECT_EQ(FormatHuman(3.2e6, Unit::kJoules), "3.20 MJ");
  EXPECT_EQ(FormatHuman(64.0, Unit::kCelsius), "64.0 °C");
  EXPECT_EQ(FormatHuman(1410.0, Unit::kMegahertz), "1,410 MHz");
}

TEST(TerminalRenderer, ByRowUnitsFormatEachRowInItsOwnUnit) {
  Table t;
  t.title = "Figures";
  t.columns = {{"figure", "Figure", Unit::kText},
               {"unit", "Unit", Unit::kText, /*in_terminal=*/false},
               {"mean", "Mean", Unit::kByRow}};
  t.rows = {{std::string("RSS"), std::string("bytes"), 3.0 * 1024 * 1024},
            {std::string("CPU"), std::string("percent"), 42.0}};
  t.row_units = {Unit::kBytes, Unit::kPercent};
  std::ostringstream out;
  RenderTableText(t, out);
  EXPECT_NE(out.str().find("3.00 MiB"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("42.0 %"), std::string::npos) << out.str();
  EXPECT_EQ(out.str().find("percent"), std::string::npos) << "a machine-only column was printed";
}

// A long kernel name is whole in report.json and the CSV; only the terminal cuts it, where the
// column says so.
TEST(TerminalRenderer, TerminalWidthCutsOnlyTheTerminal) {
  Report r;
  Section& s = r.AddSection("k", "Kernels");
  const std::string name(200, 'x');
  Table& t =
      s.AddTable("kernels", "Kernels",
                 {{"name", "Kernel", Unit::kText, true, false, 20}, {"n", "N", Unit::kCount}});
  t.rows.push_back({name + "1", int64_t{1}});
  t.rows.push_back({name + "2", int64_t{2}});
  std::ostringstream text;
  TerminalRenderer().Render(r, text);
  // Cut to 20 bytes where they differ: at the end, so both ends are kept and the rows differ.
  EXPECT_NE(text.str().find(std::string(12, 'x') + "..." + std::string(4, 'x') + "1"),
            std::string::npos)
      << text.str();
  EXPECT_NE(text.str().find("..." + std::string(4, 'x') + "2"), std::string::npos);
  EXPECT_EQ(text.str().find(std::string(21, 'x')), std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(RenderJsonString(r));
  EXPECT_EQ(j["sections"][0]["tables"][0]["rows"][0]["name"], name + "1");
  EXPECT_EQ(j["sections"][0]["tables"][0]["rows"][1]["name"], name + "2");
}

TEST(TerminalRenderer, Golden) {
  std::ostringstream out;
  TerminalRenderer().Render(SampleReport(), out);
  EXPECT_TRUE(testutil::MatchesGoldenText("renderers/report_terminal.txt", out.str()));
}

TEST(JsonRenderer, Golden) {
  EXPECT_TRUE(
      testutil::MatchesGoldenJson("renderers/report.json", RenderJsonString(SampleReport())));
}

// report.json's tables are written straight from the rows; the text must be exactly what
// nlohmann's dump(1) writes for the same tree (built here as the renderer once built it), for
// every kind of cell. (\b and \f, which base::AppendJsonEscaped writes as \u0008 and \u000c,
// are left out.)
TEST(JsonRenderer, TablesAreWhatADomDumpWouldWrite) {
  using OJson = nlohmann::ordered_json;
  Report r;
  r.title = "cells";
  Section& s = r.AddSection("s", "Section");
  s.notes = {"a note"};
  s.AddMetric("m", "Metric", 1.5, Unit::kSeconds);
  Table& t = s.AddTable("t", "Cells",
                        {{"name", "Name"},
                         {"time_s", "Time", Unit::kSeconds},
                         {"n", "Count", Unit::kCount},
                         {"ok", "OK", Unit::kBool}});
  t.rows = {
      {std::string("quote \" back \\ nl \n tab \t ctl \x01 \xc2\xb5s"), 100.0, int64_t{-7}, true},
      {std::string("bad \xff utf-8"), 1e-5, int64_t{9007199254740993}, false},
      {Value(), std::nan(""), Value(), Value()},
      {std::string("short row"), -0.0},
      {std::string("big"), 1.5e300, int64_t{0}, true}};
  t.footer = {{std::string("Total"), 0.1 + 0.2, int64_t{3}, Value()}};
  t.notes = {"n1", "n2"};
  Table& dup = s.AddTable("dup", "Duplicate keys", {{"k", "A"}, {"k", "B"}}, TableKind::kDetail);
  dup.rows = {{std::string("first"), std::string("second")}};
  s.AddTable("empty", "No rows", {{"x", "X"}}, TableKind::kSeries);
  s.AddTable("nocols", "No columns", {}).rows = {{}};

  auto cell = [](const Value& v) -> OJson {
    if (const auto* i = std::get_if<int64_t>(&v)) return *i;
    if (const auto* d = std::get_if<double>(&v)) return std::isfinite(*d) ? OJson(*d) : OJson();
    if (const auto* str = std::get_if<std::string>(&v)) return *str;
    if (const auto* b = std::get_if<bool>(&v)) return *b;
    return nullptr;
  };
  auto rows = [&](const Table& tb, const std::vector<std::vector<Value>>& rs) {
    OJson out = OJson::array();
    for (const auto& row : rs) {
      OJson o = OJson::object();
      for (size_t i = 0; i < tb.columns.size(); ++i)
        o[tb.columns[i].key] = i < row.size() ? cell(row[i]) : OJson();
      out.push_back(std::move(o));
    }
    return out;
  };
  OJson section = {
      {"id", "s"}, {"title", "Section"}, {"notes", s.notes}, {"findings", OJson::array()}};
  section["metrics"]["m"] = {{"title", "Metric"}, {"value", 1.5}, {"unit", "seconds"}};
  section["tables"] = OJson::array();
  for (const Table& tb : s.tables) {
    OJson cols = OJson::array();
    for (const Column& c : tb.columns)
      cols.push_back({{"key", c.key}, {"title", c.title}, {"unit", UnitName(c.unit)}});
    const char* kind = tb.kind == TableKind::kSeries   ? "series"
                       : tb.kind == TableKind::kDetail ? "detail"
                                                       : "table";
    section["tables"].push_back({{"id", tb.id},
                                 {"title", tb.title},
                                 {"kind", kind},
                                 {"columns", cols},
                                 {"rows", rows(tb, tb.rows)},
                                 {"footer", rows(tb, tb.footer)},
                                 {"notes", tb.notes}});
  }
  const std::string expected = section.dump(1, ' ', false, OJson::error_handler_t::replace);
  const std::string doc = RenderJsonString(r);
  // The section, two levels down in the document.
  std::string indented;
  for (char c : expected) {
    indented += c;
    if (c == '\n') indented += "  ";
  }
  EXPECT_NE(doc.find("\"sections\": [\n  " + indented + "\n ]"), std::string::npos) << doc;
}

TEST(JsonRenderer, NestsDottedKeysAndKeepsSchemaVersion) {
  auto j = nlohmann::json::parse(RenderJsonString(SampleReport()));
  EXPECT_EQ(j["schema_version"], kSchemaVersion);
  EXPECT_EQ(j["meta"]["host"]["name"], "node-1");
  EXPECT_EQ(j["meta"]["pid"], 4242);  // terminal-hidden meta is still in report.json
  EXPECT_EQ(j["config"]["training"]["learning_rate"], 0.001);
  EXPECT_TRUE(j["sections"][1]["metrics"]["nothing"]["value"].is_null());
  EXPECT_EQ(j["sections"][1]["tables"][1]["kind"], "series");
  EXPECT_EQ(j["sections"][1]["tables"][1]["rows"][1]["v"], 12.25);
}

// The head's dotted keys, written without a JSON tree, read as nlohmann's ordered_json writes the
// same keys set one by one: first appearances keep their place, a later leaf replaces an
// object, a later key below a leaf makes it an object, escapes and odd values alike.
TEST(JsonRenderer, DottedKeysAreWhatADomDumpWouldWrite) {
  using OJson = nlohmann::ordered_json;
  Report r;
  r.kind = "analyze";
  const std::vector<std::pair<std::string, Value>> keys = {
      {"input", std::string("/runs/a")},
      {"files.0", std::string("/runs/a/rank0.json")},
      {"files.1", std::string("/runs/a/r\"an\tk1.json")},
      {"host.name", std::string("node-1")},
      {"files.10", int64_t{7}},
      {"host", std::string("replaced")},  // an object replaced by a leaf
      {"host.cores", int64_t{2}},
      {"ratio", 0.1 + 0.2},
      {"nan", std::nan("")},
      {"none", Value()},
      {"flag", false},
      {"files.1", std::string("again")},  // a leaf replaced where it stands
      {"a.b.c", std::string("deep")},
      {"a.b", std::string("leaf")},
      {"a.b.d", std::string("deeper")}};  // the leaf an object again, its old children gone
  OJson meta = OJson::object(), config = OJson::object();
  for (const auto& [k, v] : keys) {
    r.AddMeta(k, v);
    r.config.emplace_back("cfg." + k, v);
    for (auto [obj, key] : {std::pair{&meta, k}, std::pair{&config, "cfg." + k}}) {
      OJson* cur = obj;
      std::string_view rest = key;
      for (size_t dot = rest.find('.'); dot != rest.npos; dot = rest.find('.')) {
        OJson& next = (*cur)[std::string(rest.substr(0, dot))];
        if (!next.is_object()) next = OJson::object();
        cur = &next;
        rest.remove_prefix(dot + 1);
      }
      (*cur)[std::string(rest)] = ValueToJson(v);
    }
  }
  OJson expected = {{"schema_version", r.schema_version}, {"kind", r.kind}, {"title", r.title}};
  expected["meta"] = meta;
  expected["config"] = config;
  expected["sections"] = OJson::array();
  expected["diagnostics"] = OJson::array();
  EXPECT_EQ(RenderJsonString(r),
            expected.dump(1, ' ', false, OJson::error_handler_t::replace) + "\n");
  EXPECT_EQ(OJson::parse(RenderJsonString(r))["meta"]["a"]["b"].size(), 1u);
}

TEST(CsvRenderer, GoldenFiles) {
  const std::string dir = testutil::FreshTempDir();
  std::vector<std::string> written;
  ASSERT_TRUE(WriteCsvFiles(SampleReport(), dir, &written).ok());
  EXPECT_EQ(written, (std::vector<std::string>{"time_metrics.csv", "time_report.csv", "rate.csv"}));
  for (const std::string& f : written) {
    EXPECT_TRUE(testutil::MatchesGoldenText("renderers/" + f, testutil::ReadText(dir + "/" + f)));
  }
}

TEST(CsvRenderer, UnwritableFolderIsNamed) {
  Status s = WriteCsvFiles(SampleReport(), "/nonexistent-trainprof-dir", nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("/nonexistent-trainprof-dir/time_metrics.csv"), std::string::npos);
}

// Two sections with a table of one id (a run whose operators section was added twice): one
// file, the later table's, however the two writing threads take them; never a race on its
// temporary file (it failed one run in five).
TEST(CsvRenderer, TablesOfOneIdWriteOneFileTheLaterOne) {
  Report r;
  for (const char* which : {"first", "second"}) {
    Section& s = r.AddSection(which, which);
    s.AddTable("same", "Same", {{"what", "What", Unit::kText}}).rows.push_back({which});
    s.AddTable(std::string(which) + "_own", "Own", {{"n", "N", Unit::kCount}});
  }
  for (int run = 0; run < 50; ++run) {
    const std::string dir = testutil::FreshTempDir();
    std::vector<std::string> written;
    ASSERT_TRUE(WriteCsvFiles(r, dir, &written).ok()) << "run " << run;
    EXPECT_EQ(written, (std::vector<std::string>{"first_own.csv", "same.csv", "second_own.csv"}));
    EXPECT_EQ(testutil::ReadText(dir + "/same.csv"), "what\nsecond\n");
  }
}

// Rows made a part at a time: part p holds p + 1 rows.
class Parts : public RowSource {
 public:
  size_t parts() const override { return 3; }
  void AppendRows(size_t part, std::vector<std::vector<Value>>& rows) const override {
    for (size_t i = 0; i <= part; ++i)
      rows.push_back({static_cast<int64_t>(part), fmt::format("row {}", i)});
  }
};

TEST(CsvOnlyTable, RowsGoToTheCsvAndReportJsonNamesIt) {
  Report r;
  Section& s = r.AddSection("ranks", "Ranks");
  Table& t = s.AddTable("per_rank", "Per rank",
                        {{"rank", "Rank", Unit::kCount}, {"what", "What", Unit::kText}},
                        TableKind::kDetail);
  t.csv_only = true;
  t.source = std::make_shared<Parts>();
  t.notes.push_back("one note");
  std::ostringstream csv;
  RenderCsvTable(t, csv);
  EXPECT_EQ(csv.str(), "rank,what\n0,row 0\n1,row 0\n1,row 1\n2,row 0\n2,row 1\n2,row 2\n");

  const std::string json = RenderJsonString(r);
  EXPECT_NE(json.find("\"rows_in\": \"per_rank.csv\""), std::string::npos) << json;
  EXPECT_EQ(json.find("row 0"), std::string::npos) << json;
  auto back = ParseReportJson(json, "report.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  const Table* read = back->sections[0].FindTable("per_rank");
  ASSERT_NE(read, nullptr);
  EXPECT_TRUE(read->csv_only);
  EXPECT_TRUE(read->rows.empty());
  // Written again from the report.json read back, the CSV is left as it was.
  const std::string dir = testutil::FreshTempDir();
  std::vector<std::string> written;
  ASSERT_TRUE(WriteCsvFiles(*back, dir, &written).ok());
  EXPECT_TRUE(written.empty());

  std::ostringstream text;
  RenderTableText(t, text);
  EXPECT_EQ(text.str(), "  Per rank\n    rows in per_rank.csv\n");
}

}  // namespace
}  // namespace trainprof::report
