// report.html in a real browser: headless Chromium (Debian's `chromium`) opens the page from
// disk, runs its script, and we read back the DOM it ends with. The page must load with no
// console message and no script error, show the charts and tables the file holds, and sort a
// table on a click. A screenshot of each page is kept in <build>/test-artifacts/.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "util/golden.h"
#include "util/html_outline.h"
#include "util/process.h"

namespace {

namespace testutil = trainprof::testutil;
namespace fs = std::filesystem;
using testutil::RunProcess;
const std::string kTraces = std::string(TRAINPROF_SHARED_DIR) + "/data/traces/";

// TRAINPROF_CHROMIUM, else `chromium` on PATH.
std::string Chromium() {
  if (const char* env = std::getenv("TRAINPROF_CHROMIUM")) return env;
  const std::string found = testutil::FindOnPath("chromium");
  return found.empty() ? "chromium (not found on PATH)" : found;
}

struct Page {
  testutil::ProcessResult run;
  nlohmann::json outline;  // of the DOM after the script ran
  std::string console;     // Chromium's "CONSOLE" log lines: anything the page logged
};

// Opens `html` in headless Chromium and returns the DOM it ends with.
Page Open(const std::string& html, const std::string& screenshot = "") {
  // Its own profile folder, next to the page (parallel tests must not share one).
  const std::string profile = (fs::path(html).parent_path() / "chromium-profile").string();
  std::vector<std::string> argv = {Chromium(),
                                   "--headless",
                                   "--no-sandbox",
                                   "--disable-gpu",
                                   "--hide-scrollbars",
                                   "--user-data-dir=" + profile,
                                   "--enable-logging=stderr",
                                   "--v=0"};
  if (!screenshot.empty()) {
    argv.push_back("--window-size=1280,2400");
    argv.push_back("--screenshot=" + screenshot);
  } else {
    argv.push_back("--dump-dom");
  }
  argv.push_back("file://" + fs::absolute(html).string());
  Page p;
  p.run = RunProcess(argv);
  std::istringstream err(p.run.err);
  for (std::string line; std::getline(err, line);)
    if (line.find(":CONSOLE") != std::string::npos) p.console += line + "\n";
  if (screenshot.empty()) p.outline = nlohmann::json::parse(testutil::HtmlOutline(p.run.out));
  return p;
}

// The page opens cleanly, and what the browser shows is what the file holds.
void ExpectLoads(const std::string& html, const std::string& artifact) {
  const std::string text = testutil::ReadText(html);
  auto file = nlohmann::json::parse(testutil::HtmlOutline(text));
  Page p = Open(html);
  ASSERT_EQ(p.run.exit_code, 0) << Chromium() << " could not run (scripts/install-deps.sh "
                                << "installs Debian's chromium): " << p.run.err;
  EXPECT_EQ(p.console, "") << "the page logged to the console";
  EXPECT_EQ(p.outline["errors"], "");
  EXPECT_FALSE(p.run.out.empty()) << p.run.err;
  size_t charts = 0, tables = 0;
  for (const auto& s : file["sections"]) charts += s["charts"].size();
  // Every data table the file holds, the outlined sections' and the diagnostics' beside the
  // findings.
  for (size_t at = text.find("<table class=\"data\""); at != std::string::npos;
       at = text.find("<table class=\"data\"", at + 1))
    ++tables;
  EXPECT_GT(charts, 0u);
  EXPECT_EQ(p.outline["ready"],
            "charts=" + std::to_string(charts) + " tables=" + std::to_string(tables));
  EXPECT_EQ(p.outline["sections"], file["sections"]);
  EXPECT_EQ(p.outline["external_references"], 0);

  const std::string dir = std::string(TRAINPROF_ARTIFACT_DIR);
  fs::create_directories(dir);
  const std::string png = dir + "/" + artifact;
  fs::remove(png);
  Page shot = Open(html, png);
  ASSERT_EQ(shot.run.exit_code, 0) << shot.run.err;
  ASSERT_TRUE(fs::exists(png));
  EXPECT_GT(fs::file_size(png), 20'000u) << "a screenshot of a blank page is small";
}

TEST(BrowserTest, AnalyzeReportOfTwoRanks) {
  TRAINPROF_SKIP_WITHOUT_SHARED_TRACES();
  const std::string dir = testutil::FreshTempDir();
  auto r = RunProcess({TRAINPROF_CLI, "analyze", kTraces + "trace_filter", "--run-dir", dir});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectLoads(dir + "/report.html", "analyze_report.png");
}

TEST(BrowserTest, ClickSortsATable) {
  TRAINPROF_SKIP_WITHOUT_SHARED_TRACES();
  const std::string dir = testutil::FreshTempDir();
  auto r = RunProcess({TRAINPROF_CLI, "analyze", kTraces + "trace_diff_control", "--run-dir", dir});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The page as written, plus a script that clicks "Step time" twice (ascending, then
  // descending) and writes the order of the step column into an attribute.
  std::string html = testutil::ReadText(dir + "/report.html");
  const std::string probe =
      "<script>var t=document.querySelector('table[data-table=step_breakdown]');"
      "var th=t.querySelector('th[data-key=step_time_s]');th.click();"
      "var a=[].map.call(t.tBodies[0].rows,function(r){return r.cells[2].dataset.v;});"
      "th.click();var d=[].map.call(t.tBodies[0].rows,function(r){return r.cells[2].dataset.v;});"
      "document.documentElement.setAttribute('data-probe',a.join(',')+';'+d.join(','));"
      "</script></body>";
  html.replace(html.rfind("</body>"), 7, probe);
  const std::string page = dir + "/probe.html";
  std::ofstream(page) << html;
  Page p = Open(page);
  ASSERT_EQ(p.run.exit_code, 0) << p.run.err;
  EXPECT_EQ(p.console, "");
  const std::string dom = p.run.out;
  const size_t at = dom.find("data-probe=\"");
  ASSERT_NE(at, std::string::npos);
  const std::string probe_value = dom.substr(at + 12, dom.find('"', at + 12) - at - 12);
  const std::string asc = probe_value.substr(0, probe_value.find(';'));
  const std::string desc = probe_value.substr(probe_value.find(';') + 1);
  std::vector<double> up, down;
  for (auto [text, out] : {std::pair{asc, &up}, std::pair{desc, &down}}) {
    std::istringstream in(text);
    for (std::string v; std::getline(in, v, ',');) out->push_back(std::stod(v));
  }
  ASSERT_EQ(up.size(), 6u);
  EXPECT_TRUE(std::is_sorted(up.begin(), up.end()));
  EXPECT_TRUE(std::is_sorted(down.rbegin(), down.rend()));
}

#ifdef TRAINPROF_HAVE_TORCH
TEST(BrowserTest, ProfileReport) {
  const std::string dir = testutil::FreshTempDir();
  auto r = RunProcess({TRAINPROF_CLI, "profile", "--epochs", "1", "--limit-train-batches", "40",
                       "--quiet", "--set", "system.enabled=true", "--set", "system.interval_s=0.05",
                       "--run-dir", dir});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectLoads(dir + "/report.html", "profile_report.png");
  auto file =
      nlohmann::json::parse(testutil::HtmlOutline(testutil::ReadText(dir + "/report.html")));
  std::vector<std::string> charts;
  for (const auto& s : file["sections"])
    for (const auto& c : s["charts"]) charts.push_back(c["id"]);
  for (const char* id : {"time_report", "throughput", "dataloader_wait", "system_cpu",
                         "system_memory", "memory_curve_r0_cpu", "operators_top"})
    EXPECT_NE(std::find(charts.begin(), charts.end(), id), charts.end()) << id;
}
#endif

}  // namespace

namespace {

// The live page of `trainprof watch RUN_DIR --port` in headless Chromium, after its script ran
// for a few (virtual) seconds against the running server.
Page OpenLive(const std::string& url, const std::string& profile) {
  Page p;
  p.run = RunProcess({Chromium(), "--headless", "--no-sandbox", "--disable-gpu",
                      "--user-data-dir=" + profile, "--enable-logging=stderr", "--v=0",
                      "--virtual-time-budget=3000", "--dump-dom", url});
  std::istringstream err(p.run.err);
  for (std::string line; std::getline(err, line);)
    if (line.find(":CONSOLE") != std::string::npos) p.console += line + "\n";
  return p;
}

void WriteLive(const std::string& path, int step, bool finished) {
  std::ofstream(path) << nlohmann::json{{"step", step},
                                        {"elapsed_s", 3.0},
                                        {"finished", finished},
                                        {"step_median_s", 0.041},
                                        {"recent_step_s", {0.04, 0.041, 0.05}},
                                        {"samples_per_s", 777.6},
                                        {"split",
                                         {{"data_wait", 0.31},
                                          {"forward", 0.2},
                                          {"backward", 0.3},
                                          {"optimizer", 0.1},
                                          {"communication", 0.05},
                                          {"other", 0.04}}},
                                        {"devices", {{{"index", 0}, {"util_pct", 34.0}}}},
                                        {"verdict", "input-bound"},
                                        {"finding", "the loop waits for data 31 % of its time"}};
}

}  // namespace

// The page shows the run folder's snapshot (figures, split, device, verdict), fetched by its
// script from the server, and shows the next one when the file changes; nothing is logged.
TEST(BrowserTest, LivePageFollowsTheRun) {
  const std::string dir = testutil::FreshTempDir();
  WriteLive(dir + "/live.json", 5, false);
  const std::string port = std::to_string(testutil::FreeTcpPort());
  testutil::Child watch({TRAINPROF_CLI, "watch", dir, "--port", port, "--interval", "0.1"});
  std::string line;
  ASSERT_TRUE(watch.WaitForStderr("live page at", &line)) << line;
  const std::string url = "http://127.0.0.1:" + port + "/";
  Page first = OpenLive(url, dir + "/chromium-profile");
  ASSERT_EQ(first.run.exit_code, 0) << first.run.err;
  EXPECT_EQ(first.console, "");
  EXPECT_NE(first.run.out.find("data-step=\"5\""), std::string::npos) << first.run.out;
  for (const char* shown : {"777.6", "41.0 ms", "data wait 31 %", "GPU 0", "34 %", "input-bound",
                            "the loop waits for data 31 % of its time", "one process"})
    EXPECT_NE(first.run.out.find(shown), std::string::npos) << shown;
  EXPECT_NE(first.run.out.find("<polyline"), std::string::npos);  // the step-time sparkline
  WriteLive(dir + "/live.json", 9, true);
  Page next = OpenLive(url, dir + "/chromium-profile");
  EXPECT_NE(next.run.out.find("data-step=\"9\""), std::string::npos);
  EXPECT_NE(next.run.out.find("| finished"), std::string::npos);
  watch.Signal(SIGTERM);
  watch.Wait();
}

// A port already taken is one line and exit 2.
TEST(BrowserTest, LivePageOnATakenPortIsOneLine) {
  const std::string dir = testutil::FreshTempDir();
  WriteLive(dir + "/live.json", 5, true);
  const std::string port = std::to_string(testutil::FreeTcpPort());
  testutil::Child first({TRAINPROF_CLI, "watch", dir, "--port", port});
  std::string line;
  ASSERT_TRUE(first.WaitForStderr("live page at", &line));
  auto r = RunProcess({TRAINPROF_CLI, "watch", dir, "--port", port});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "trainprof: cannot serve the live page on 127.0.0.1:" + port +
                       ": the port is in use, or the address is not this machine's\n");
  first.Signal(SIGTERM);
  first.Wait();
}
