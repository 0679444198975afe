#include "report/html.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "report/format.h"
#include "report/json.h"
#include "report/json_reader.h"
#include "report/svg.h"
#include "util/golden.h"
#include "util/html_outline.h"

namespace trainprof::report {
namespace {

// A report with each view report.html knows (speed, memory, ranks with a straggler), a series
// no view knows, a detail table, a by-row table and text that must be escaped.
Report ViewsReport() {
  Report r;
  r.title = "views <script>alert(1)</script> & co";
  r.AddMeta("trainprof_version", std::string("0.1.0"));
  r.AddMeta("created_utc", std::string("2026-11-23T00:00:00Z"));
  r.config.emplace_back("training.epochs", int64_t{2});

  Section& speed = r.AddSection("speed", "Speed report");
  speed.AddMetric("training_avg_throughput_per_sample", "Training throughput per sample", 812.5,
                  Unit::kPerSecond, "samples/s");
  for (const char* id : {"training_rate", "validation_rate"}) {
    Table& t = speed.AddTable(id, id,
                              {{"step", "Step", Unit::kCount},
                               {"time_s", "Time", Unit::kSeconds},
                               {"samples_per_s", "Samples/s", Unit::kPerSecond},
                               {"data_wait_s", "Data wait", Unit::kSeconds}},
                              TableKind::kSeries);
    for (int64_t i = 0; i < 1500; ++i) {
      t.rows.push_back({i, 0.01 * static_cast<double>(i), 800.0 + static_cast<double>(i % 7),
                        i == 700 ? 0.25 : 0.001});
    }
  }
  speed.findings.push_back({Severity::kWarning, "data loading > 5 % of the step"});
  // The hints session::AddSpeedCharts sets on these tables.
  for (Table& t : speed.tables) {
    t.charts.push_back({.kind = ChartKind::kLines,
                        .id = "throughput",
                        .title = "Throughput over time (samples/s)",
                        .label = "time_s",
                        .values = {"samples_per_s"},
                        .names = {t.id == "training_rate" ? "training" : "validation"},
                        .y_suffix = "samples/s"});
  }
  speed.tables.front().charts.push_back({.kind = ChartKind::kBars,
                                         .id = "dataloader_wait",
                                         .title = "Data-loader wait per training step",
                                         .label = "step",
                                         .values = {"data_wait_s"},
                                         .names = {"data wait"},
                                         .limit = 0,
                                         .horizontal = false});

  Section& ops = r.AddSection("operators", "Operator and memory report");
  Table& mem = ops.AddTable("memory_timeline", "Memory timeline",
                            {{"time_s", "Time", Unit::kSeconds},
                             {"device", "Device", Unit::kText},
                             {"allocated_bytes", "Allocated", Unit::kBytes},
                             {"reserved_bytes", "Reserved", Unit::kBytes}},
                            TableKind::kSeries);
  for (int i = 0; i < 100000; ++i) {  // long: reduced for the chart, its peak kept
    const double bytes = i == 54321 ? 3.0 * (1 << 30) : 1e6 * (i % 100);
    mem.rows.push_back({1e-3 * i, std::string("cpu"), bytes, Value()});
  }
  mem.charts.push_back({.kind = ChartKind::kLines,
                        .title = "Memory timeline (allocated, peak marked)",
                        .label = "time_s",
                        .values = {"allocated_bytes", "reserved_bytes"},
                        .names = {"allocated", "reserved"},
                        .split_by = "device",
                        .mark_peak = true});
  Table& detail = ops.AddTable("operators", "Every operator",
                               {{"name", "Name"}, {"self_cpu_s", "Self CPU", Unit::kSeconds}},
                               TableKind::kDetail);
  detail.rows.push_back({std::string("aten::mm"), 0.5});

  Section& ranks = r.AddSection("ranks", "Ranks");
  Table& rt = ranks.AddTable(
      "rank_summary", "Per rank",
      {{"rank", "Rank", Unit::kCount}, {"median_step_s", "Median step", Unit::kSeconds}});
  for (int64_t rank = 0; rank < 4; ++rank) rt.rows.push_back({rank, rank == 2 ? 0.013 : 0.010});
  rt.charts.push_back({.kind = ChartKind::kBars,
                       .id = "rank_median_step",
                       .title = "Median training step per rank",
                       .values = {"median_step_s"},
                       .names = {"median step"},
                       .limit = 0,
                       .label_format = "rank {rank}",
                       .highlight_key = "rank",
                       .highlight_value = int64_t{2}});
  ranks.AddMetric("slowest_rank", "Slowest rank", int64_t{2}, Unit::kCount);
  ranks.findings.push_back({Severity::kWarning, "rank 2 is the slowest (straggler)"});

  Section& other = r.AddSection("custom", "A section from a later issue");
  Table& s = other.AddTable("queue_depth", "Queue depth over time",
                            {{"time_s", "Time", Unit::kSeconds},
                             {"depth", "Depth", Unit::kCount},
                             {"label", "Label", Unit::kText}},
                            TableKind::kSeries);
  s.rows.push_back({0.0, int64_t{1}, std::string("a")});
  s.rows.push_back({1.0, int64_t{3}, std::string("b")});
  Table& by_row =
      other.AddTable("figures", "Figures",
                     {{"figure", "Figure"}, {"unit", "Unit"}, {"mean", "Mean", Unit::kByRow}});
  by_row.rows.push_back({std::string("CPU"), std::string("percent"), 50.0});
  by_row.rows.push_back({std::string("RSS"), std::string("bytes"), 1048576.0});
  by_row.row_units = {Unit::kPercent, Unit::kBytes};

  r.diagnostics.push_back({DiagnosticId::kDroppedEvents, 3, "3 events dropped"});
  return r;
}

TEST(HtmlTest, OutlineMatchesGolden) {
  const std::string html = RenderHtmlString(ViewsReport());
  EXPECT_TRUE(testutil::MatchesGoldenJson("html/views_outline.json", testutil::HtmlOutline(html)));
}

TEST(HtmlTest, EscapesTextAndFetchesNothing) {
  const std::string html = RenderHtmlString(ViewsReport());
  EXPECT_EQ(html.find("<script>alert"), std::string::npos);
  EXPECT_NE(html.find("views &lt;script&gt;alert(1)&lt;/script&gt; &amp; co"), std::string::npos);
  auto outline = nlohmann::json::parse(testutil::HtmlOutline(html));
  EXPECT_EQ(outline["external_references"], 0);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find(" src="), std::string::npos);
}

// A title, sub-title or diagnostic that starts with an absolute path names the file; the path is
// its tooltip, so the page does not scroll sideways.
TEST(HtmlTest, AbsolutePathsAreNamedByTheirFileWithThePathInATooltip) {
  Report r;
  r.kind = "analyze";
  const std::string path = "/home/someone/experiments/2026-11/llama-70b/h100/rank0.pt.trace.json";
  r.title = "trainprof analyze: " + path;
  r.AddMeta("input", path);
  r.diagnostics.push_back({DiagnosticId::kUnknownCategory, 3, path + ": 3 events of category x"});
  const std::string html = RenderHtmlString(r);
  EXPECT_NE(html.find("<title>trainprof analyze: rank0.pt.trace.json</title>"), std::string::npos);
  EXPECT_NE(html.find("<h1>trainprof analyze: <span class=\"path\" title=\"" + path +
                      "\">rank0.pt.trace.json</span></h1>"),
            std::string::npos)
      << html.substr(0, 3000);
  EXPECT_NE(html.find("<td><span class=\"path\" title=\"" + path +
                      "\">rank0.pt.trace.json</span>: 3 events"),
            std::string::npos);
  EXPECT_EQ(html.find(">" + path), std::string::npos);  // never shown whole
}

// A 1,000-rank job's per-step table: the page holds its first kHtmlRowLimit rows and says where
// the rest are; every row stays in the CSV and report.json.
TEST(HtmlTest, LongTablesOfEveryKindAreCutWithANote) {
  Report r;
  r.title = "ranks";
  Section& s = r.AddSection("overview", "Overview");
  for (TableKind kind : {TableKind::kTable, TableKind::kDetail}) {
    const char* id = kind == TableKind::kTable ? "step_breakdown" : "operator_kernel_view";
    Table& t = s.AddTable(id, id, {{"rank", "Rank", Unit::kCount}}, kind);
    for (int64_t i = 0; i < 2500; ++i) t.rows.push_back({i});
  }
  const std::string html = RenderHtmlString(r);
  EXPECT_NE(html.find("The first 1000 of 2500 rows; all are in step_breakdown.csv and "
                      "report.json."),
            std::string::npos);
  EXPECT_NE(html.find("(first 1000 of 2500 rows; all in operator_kernel_view.csv)"),
            std::string::npos);
  EXPECT_NE(html.find("data-v=\"999\""), std::string::npos);
  EXPECT_EQ(html.find("data-v=\"1000\""), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(RenderJsonString(r))["sections"][0]["tables"][0]["rows"].size(),
            2500u);
}

// A run of many files has a meta line a file: the page shows the first lines of Run details
// and says the rest are in report.json (there is no meta.csv).
TEST(HtmlTest, ManyMetaLinesAreCutAndSaidToBeInReportJson) {
  Report r;
  for (int64_t i = 0; i < 1500; ++i)
    r.AddMeta(fmt::format("files.{}", i), fmt::format("/runs/a/rank{}.json", i), false);
  const std::string html = RenderHtmlString(r);
  EXPECT_NE(html.find("The first 1000 of 1500 rows; all are in report.json."), std::string::npos);
  EXPECT_NE(html.find("/runs/a/rank999.json"), std::string::npos);
  EXPECT_EQ(html.find("/runs/a/rank1000.json"), std::string::npos);
  EXPECT_EQ(html.find("meta.csv"), std::string::npos);
}

// 1,000 ranks of 49 steps: one bar per pixel at most, and the slowest step still drawn with its
// own label.
TEST(HtmlTest, ManyBarsKeepTheLargestOfEachGroup) {
  svg::BarChart c{.id = "steps", .title = "Steps", .unit = Unit::kSeconds, .segments = {"a", "b"}};
  for (int i = 0; i < 49000; ++i) {
    c.bars.push_back(fmt::format("#{}", i));
    c.values.push_back({0.01, i == 31337 ? 1.0 : 0.001 * (i % 7)});
  }
  const std::string out = svg::Render(c);
  size_t bars = 0;
  for (size_t at = out.find("<g class=\"bar"); at != std::string::npos;
       at = out.find("<g class=\"bar", at + 1))
    ++bars;
  EXPECT_EQ(bars, 598u);  // groups of 82
  EXPECT_NE(out.find("Steps (the largest of each 82 bars of 49000)"), std::string::npos);
  EXPECT_NE(out.find("#31337 \xe2\x80\x94 b: "), std::string::npos);
  EXPECT_EQ(out.find("#31336 \xe2\x80\x94"), std::string::npos);
}

TEST(HtmlTest, SeriesTablesAreCutButChartsSeeEveryPeak) {
  const std::string html = RenderHtmlString(ViewsReport());
  EXPECT_NE(html.find("(first 1000 of 1500 rows; all in training_rate.csv)"), std::string::npos);
  // The memory spike is one row in 100 000; the chart's peak label still names it.
  EXPECT_NE(html.find("peak " + FormatHuman(3.0 * (1 << 30), Unit::kBytes) + " at " +
                      FormatHuman(54.321, Unit::kSeconds)),
            std::string::npos);
  // The data-wait spike of step 700 is a bar with its value.
  EXPECT_NE(html.find("<title>700: " + FormatHuman(0.25, Unit::kSeconds) + "</title>"),
            std::string::npos);
}

TEST(HtmlTest, ByRowUnitsAndStraggler) {
  const std::string html = RenderHtmlString(ViewsReport());
  EXPECT_NE(html.find("data-v=\"50\">50.0 %</td>"), std::string::npos);
  EXPECT_NE(html.find("data-v=\"1048576\">1.00 MiB</td>"), std::string::npos);
  auto outline = nlohmann::json::parse(testutil::HtmlOutline(html));
  for (const auto& s : outline["sections"]) {
    if (s["id"] != "ranks") continue;
    EXPECT_EQ(s["tables"][0]["highlighted"], 1);
    EXPECT_EQ(s["charts"][0]["id"], "rank_median_step");
  }
}

TEST(HtmlTest, NoHighlightWithoutAHint) {
  Report r = ViewsReport();
  for (Section& s : r.sections)
    for (Table& t : s.tables)
      for (ChartHint& h : t.charts) h.highlight_key.clear();
  auto outline = nlohmann::json::parse(testutil::HtmlOutline(RenderHtmlString(r)));
  for (const auto& s : outline["sections"]) {
    if (s["id"] == "ranks") {
      EXPECT_EQ(s["tables"][0]["highlighted"], 0);
    }
  }
}

// A table html_views.cc knows nothing of, with every kind of hint: stacked vertical bars in row
// order with a formatted, trimmed label and a highlighted row, and lines split by a column.
TEST(HtmlTest, AnyHintedTableGetsItsCharts) {
  Report r;
  Section& s = r.AddSection("later", "A section from a later issue");
  Table& t = s.AddTable("phases", "Phases",
                        {{"worker", "Worker", Unit::kCount},
                         {"phase", "Phase"},
                         {"time_s", "Time", Unit::kSeconds},
                         {"read_s", "Read", Unit::kSeconds},
                         {"decode_s", "Decode", Unit::kSeconds}});
  t.rows = {{int64_t{0}, std::string("Phase#a"), 0.0, 0.5, 0.25},
            {int64_t{1}, std::string("Phase#b"), 0.0, 0.75, 0.125},
            {int64_t{0}, std::string("Phase#c"), 1.0, 0.25, 0.5}};
  t.charts.push_back({.kind = ChartKind::kBars,
                      .id = "phase_bars",
                      .title = "Read and decode per phase",
                      .values = {"read_s", "decode_s"},
                      .limit = 0,
                      .horizontal = false,
                      .label_format = "w{worker} {phase}",
                      .label_trim = "Phase",
                      .highlight_key = "phase",
                      .highlight_value = std::string("Phase#b")});
  t.charts.push_back({.kind = ChartKind::kLines,
                      .id = "read_lines",
                      .title = "Read over time",
                      .label = "time_s",
                      .values = {"read_s"},
                      .names = {"read"},
                      .split_by = "worker"});
  const std::string html = RenderHtmlString(r);
  const auto outline = nlohmann::json::parse(testutil::HtmlOutline(html));
  const auto& charts = outline["sections"][0]["charts"];
  ASSERT_EQ(charts.size(), 2u) << charts;
  EXPECT_EQ(charts[0]["id"], "phase_bars");
  EXPECT_EQ(charts[0]["kind"], "bar");
  EXPECT_EQ(charts[0]["series"], 2);
  EXPECT_EQ(charts[1]["id"], "read_lines");
  EXPECT_EQ(charts[1]["kind"], "line");
  EXPECT_EQ(charts[1]["series"], 2);  // worker 0 and worker 1
  EXPECT_EQ(outline["sections"][0]["tables"][0]["highlighted"], 1);
  EXPECT_NE(html.find("Read and decode per phase"), std::string::npos);
  EXPECT_NE(html.find("w0 #a"), std::string::npos);  // in table order, prefix trimmed
  EXPECT_NE(html.find("w1 #b"), std::string::npos);
  EXPECT_LT(html.find("w0 #a"), html.find("w0 #c"));
  EXPECT_NE(html.find("<g class=\"bar highlight\">"), std::string::npos);
  EXPECT_NE(html.find(">0 read<"), std::string::npos) << "the legend names the split value";
  // An unhinted series table still gets the generic chart; a hinted one only its hints.
  EXPECT_EQ(html.find("data-chart=\"phases\""), std::string::npos);
}

// What a new user saw: a "Recommendations" heading with nothing under it that the nav bar linked
// to, findings whose severity showed only as a border colour, and charts nobody asked for.
TEST(HtmlTest, FindingsOnlySectionsAreNotEmptyHeadingsAndFindingsSayTheirSeverity) {
  Report r;
  r.title = "trainprof analyze: /a/very/long/path/to/some/traces/folder/that/overflows/the/page";
  Section& rec = r.AddSection("recommendations", "Recommendations");
  rec.findings.push_back({Severity::kWarning, "the GPU is idle"});
  Section& ops = r.AddSection("operator_view", "Operator view");
  Table& t =
      ops.AddTable("ops", "Operators", {{"name", "Name"}, {"self_s", "Self", Unit::kSeconds}});
  t.rows = {{std::string("aten::mm"), 2.0}, {std::string("aten::add"), 1.0}};
  t.charts.push_back({.kind = ChartKind::kBars, .label = "name", .values = {"self_s"}, .limit = 1});
  const std::string html = RenderHtmlString(r);
  EXPECT_EQ(html.find("id=\"s-recommendations\""), std::string::npos);
  EXPECT_EQ(html.find("href=\"#s-recommendations\""), std::string::npos);
  EXPECT_NE(html.find("<span class=\"sev\">warning</span>"), std::string::npos);
  EXPECT_NE(html.find("the GPU is idle"), std::string::npos);
  EXPECT_NE(html.find("href=\"#s-operator_view\""), std::string::npos);
  // The hint's chart: one bar (the limit), the largest row.
  const nlohmann::json outline = nlohmann::json::parse(testutil::HtmlOutline(html));
  bool found = false;
  for (const auto& sec : outline["sections"])
    if (sec["id"] == "operator_view") {
      ASSERT_EQ(sec["charts"].size(), 1u);
      EXPECT_EQ(sec["charts"][0]["id"], "ops");
      found = true;
    }
  EXPECT_TRUE(found);
  EXPECT_NE(html.find("aten::mm</text>"), std::string::npos);
  EXPECT_EQ(html.find("aten::add</text>"), std::string::npos);
}

// At 1,000 steps every step-axis label read "ProfilerS…": the common prefix goes, and the axis
// keeps about two dozen labels.
TEST(HtmlTest, StepAxisLabelsAreShortAndThinned) {
  Report r;
  Section& ov = r.AddSection("overview", "Overview");
  Table& t = ov.AddTable("step_breakdown", "Steps",
                         {{"rank", "Rank"},
                          {"step", "Step"},
                          {"step_time_s", "Step time", Unit::kSeconds},
                          {"kernel_s", "Kernel", Unit::kSeconds}});
  for (int i = 0; i < 1000; ++i)
    t.rows.push_back({std::string("0"), fmt::format("ProfilerStep#{}", i), 0.01, 0.005});
  t.charts.push_back({.kind = ChartKind::kBars,  // as analysis/overview_section.cc asks
                      .label = "step",
                      .values = {"kernel_s"},
                      .limit = 0,
                      .horizontal = false,
                      .label_trim = "ProfilerStep"});
  const std::string html = RenderHtmlString(r);
  EXPECT_EQ(html.find("ProfilerS\xe2\x80\xa6"), std::string::npos);
  EXPECT_NE(html.find(">#0</text>"), std::string::npos);
  size_t labels = 0;
  for (size_t at = html.find("class=\"cat\""); at != std::string::npos;
       at = html.find("class=\"cat\"", at + 1))
    ++labels;
  EXPECT_GT(labels, 10u);
  EXPECT_LE(labels, 30u);
}

TEST(SvgTest, NiceTicks) {
  EXPECT_EQ(svg::NiceTicks(0, 9.3, 5), (std::vector<double>{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(svg::NiceTicks(0, 0.03, 3), (std::vector<double>{0, 0.01, 0.02, 0.03}));
  EXPECT_EQ(svg::NiceTicks(-5, 5, 2), (std::vector<double>{-5, 0, 5}));
  EXPECT_EQ(svg::NiceTicks(1, 1, 5), (std::vector<double>{1}));
}

// The throughput chart's x ticks: a rounded tick outside the data (0 and 100 for x in [3, 97])
// would be drawn outside the plot's frame [76, 744].
TEST(SvgTest, LineChartTicksStayInsideThePlot) {
  svg::LineChart line{.id = "l", .title = "t", .x_unit = Unit::kNumber};
  line.lines.push_back({"a", {3, 50, 97}, {-3, 10, 12}});
  const std::string svg = svg::Render(line);
  const std::string mark = "<text class=\"tick\" x=\"";
  int ticks = 0;
  for (size_t at = svg.find(mark); at != std::string::npos; at = svg.find(mark, at + 1)) {
    const double x = std::stod(svg.substr(at + mark.size()));
    EXPECT_GE(x, 70) << svg.substr(at, 80);  // y ticks sit just left of the frame
    EXPECT_LE(x, 744.1) << svg.substr(at, 80);
    ++ticks;
  }
  EXPECT_GT(ticks, 5);
}

TEST(HtmlTest, LinksTheTimelineWithHowToOpenIt) {
  Report profile;
  profile.kind = "profile";
  const std::string p = RenderHtmlString(profile);
  EXPECT_NE(p.find("<a href=\"trace.json\">trace.json</a>"), std::string::npos);
  EXPECT_NE(p.find("ui.perfetto.dev"), std::string::npos);
  Report analyze;
  analyze.kind = "analyze";
  analyze.AddMeta("input", std::string("traces/<rank0>.json"));
  const std::string a = RenderHtmlString(analyze);
  EXPECT_NE(a.find("the trace analysed, traces/&lt;rank0&gt;.json"), std::string::npos);
  EXPECT_EQ(a.find("href=\"trace.json\""), std::string::npos);
}

TEST(SvgTest, EmptyChartsSaySo) {
  svg::LineChart line{.id = "l", .title = "nothing"};
  line.lines.push_back({"a", {0, 1}, {NAN, NAN}});
  EXPECT_NE(svg::Render(line).find("no values to plot"), std::string::npos);
  svg::BarChart bar{.id = "b", .title = "nothing"};
  EXPECT_NE(svg::Render(bar).find("no values to plot"), std::string::npos);
}

TEST(SvgTest, StackedBarsCarryEverySegment) {
  svg::BarChart c{.id = "steps", .title = "Steps", .unit = Unit::kSeconds};
  c.bars = {"#1", "#2"};
  c.segments = {"Kernel", "Memcpy"};
  c.values = {{0.010, 0.002}, {0.011, 0.001}};
  const std::string s = svg::Render(c);
  EXPECT_NE(s.find("data-series=\"2\""), std::string::npos);
  EXPECT_NE(s.find("<title>#2 \xe2\x80\x94 Memcpy: " + FormatHuman(0.001, Unit::kSeconds)),
            std::string::npos);
}

// "…OMPUTATION overlapping COMMUNICATION": a long capital label ran off the chart's left edge.
// It is cut to fit, with "..."; a short one stays whole.
TEST(SvgTest, HorizontalBarLabelsFitTheMargin) {
  svg::BarChart c{.id = "types", .title = "Types", .unit = Unit::kSeconds, .horizontal = true};
  c.bars = {"COMPUTATION overlapping COMMUNICATION", "aten::mm"};
  c.segments = {"Time"};
  c.values = {{1.0}, {0.5}};
  const std::string s = svg::Render(c);
  EXPECT_EQ(s.find(">COMPUTATION overlapping COMMUNICATION</text>"), std::string::npos);
  EXPECT_NE(s.find(">COMPUTATION overlapping CO"), std::string::npos);
  EXPECT_NE(s.find(">aten::mm</text>"), std::string::npos);
}

TEST(JsonReaderTest, RoundTripsEveryField) {
  Report views = ViewsReport();
  views.AddSection("empty", "Empty view").no_data = "Nothing recorded: nothing to show.";
  const std::string once = RenderJsonString(views);
  auto back = ParseReportJson(once, "x.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  const std::string twice = RenderJsonString(*back);
  auto diff = std::mismatch(once.begin(), once.end(), twice.begin(), twice.end());
  EXPECT_TRUE(diff.first == once.end() && diff.second == twice.end())
      << "first difference at byte " << (diff.first - once.begin()) << ": "
      << once.substr(diff.first - once.begin(), 80) << " vs "
      << twice.substr(diff.second - twice.begin(), 80);
  const Table& by_row = back->sections[3].tables[1];
  EXPECT_EQ(by_row.row_units, (std::vector<Unit>{Unit::kPercent, Unit::kBytes}));
  // The page of a report read back is the page of the report.
  EXPECT_TRUE(RenderHtmlString(*back) == RenderHtmlString(views));
  EXPECT_EQ(back->sections.back().no_data, "Nothing recorded: nothing to show.");
}

// report.html drawn from report.json read back (a pooled report, `trainprof run`) has the
// charts the builders asked for: every field of a hint survives the round trip.
TEST(JsonReaderTest, ChartHintsSurviveTheRoundTrip) {
  Report r;
  Section& s = r.AddSection("s", "S");
  Table& t = s.AddTable("t", "T", {{"rank", "Rank", Unit::kCount}, {"v_s", "V", Unit::kSeconds}});
  t.rows = {{int64_t{0}, 1.0}, {int64_t{1}, 2.0}};
  const ChartHint bars{.kind = ChartKind::kBars,
                       .id = "bars",
                       .title = "Bars",
                       .label = "rank",
                       .values = {"v_s"},
                       .names = {"value"},
                       .limit = 0,
                       .horizontal = false,
                       .label_format = "rank {rank}",
                       .label_trim = "r",
                       .highlight_key = "rank",
                       .highlight_value = int64_t{1}};
  const ChartHint lines{.kind = ChartKind::kLines,
                        .label = "rank",
                        .values = {"v_s"},
                        .split_by = "rank",
                        .mark_peak = true,
                        .y_suffix = "x/s",
                        .highlight_key = "rank",
                        .highlight_value = std::string("CROSSED")};
  t.charts = {bars, lines};
  const std::string once = RenderJsonString(r);
  auto back = ParseReportJson(once, "x.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  const std::vector<ChartHint>& got = back->sections[0].tables[0].charts;
  ASSERT_EQ(got.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const ChartHint& want = t.charts[i];
    EXPECT_EQ(got[i].kind, want.kind);
    EXPECT_EQ(got[i].id, want.id);
    EXPECT_EQ(got[i].title, want.title);
    EXPECT_EQ(got[i].label, want.label);
    EXPECT_EQ(got[i].values, want.values);
    EXPECT_EQ(got[i].names, want.names);
    EXPECT_EQ(got[i].limit, want.limit);
    EXPECT_EQ(got[i].horizontal, want.horizontal);
    EXPECT_EQ(got[i].label_format, want.label_format);
    EXPECT_EQ(got[i].label_trim, want.label_trim);
    EXPECT_EQ(got[i].split_by, want.split_by);
    EXPECT_EQ(got[i].mark_peak, want.mark_peak);
    EXPECT_EQ(got[i].y_suffix, want.y_suffix);
    EXPECT_EQ(got[i].highlight_key, want.highlight_key);
    EXPECT_EQ(got[i].highlight_value, want.highlight_value);
  }
  EXPECT_EQ(RenderJsonString(*back), once);
  EXPECT_EQ(RenderHtmlString(*back), RenderHtmlString(r));
  // A table without hints writes no "charts" member.
  EXPECT_FALSE(
      nlohmann::json::parse(RenderJsonString(ViewsReport()))["sections"][3]["tables"][1].contains(
          "charts"));
}

TEST(JsonReaderTest, BadInputIsOneClearError) {
  auto not_json = ParseReportJson("{\"schema_version\": 1,", "runs/a/report.json");
  ASSERT_FALSE(not_json.ok());
  EXPECT_EQ(not_json.status().message(), "runs/a/report.json: not valid JSON at byte 22");
  auto foreign = ParseReportJson("{\"traceEvents\": []}", "t.json");
  ASSERT_FALSE(foreign.ok());
  EXPECT_EQ(foreign.status().message(),
            "t.json: not a trainprof report (no \"schema_version\" and \"sections\")");
  auto newer = ParseReportJson("{\"schema_version\": 99, \"sections\": []}", "n.json");
  ASSERT_FALSE(newer.ok());
  EXPECT_EQ(newer.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(newer.status().message(),
            "n.json: report schema_version 99 is newer than this trainprof reads (2); use a "
            "newer trainprof");
  auto bad_table = ParseReportJson(
      "{\"schema_version\": 1, \"sections\": [{\"id\": \"s\", \"tables\": [{\"id\": 3}]}]}",
      "b.json");
  ASSERT_FALSE(bad_table.ok());
  EXPECT_EQ(bad_table.status().message(), "b.json: section \"s\": a table without \"columns\"");
  auto missing = ReadReportJson("/nonexistent/report.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace trainprof::report
