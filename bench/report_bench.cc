// report.html, many ranks' CSV files and the run history: the page for the largest shared
// trace's analysis (trace_diff_control, 35 MB of JSON), the CSVs of 1,000 copies of a real H100
// rank (as `analyze` writes them for thousands of ranks), report.json's head for 100,000 rank
// files, and `runs list` over 10 000 stored runs.
// TRAINPROF_BENCH_KEEP_DB=PATH leaves the 10 000-run database at PATH, so
// scripts/report-benchmark.sh can time the whole `trainprof runs list` command on it.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "analysis/analyze.h"
#include "analysis/rank_summary.h"
#include "analysis/ranks/detail_store.h"
#include "base/atomic_file.h"
#include "base/malloc_tuning.h"
#include "history/run_db.h"
#include "report/csv.h"
#include "report/html.h"
#include "report/json.h"
#include "report/terminal.h"
#include "scratch_path.h"
#include "trace/trace_files.h"

namespace {

using namespace trainprof;

const std::string kOwnTrace =
    std::string(TRAINPROF_SOURCE_DIR) + "/fuzz/corpus/kineto/kineto_small.json.gz";

bool Smoke() { return std::getenv("TRAINPROF_BENCH_SMOKE") != nullptr; }

const report::Report& LargestAnalysis() {
  static const report::Report r = [] {
    std::string path =
        std::string(TRAINPROF_SHARED_DIR) +
        (Smoke() ? "/data/traces/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"
                 : "/data/traces/trace_diff_control/control.json.gz");
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
      // A clone with nothing beside it: the project's own small trace, so the benchmark runs.
      fmt::print(stderr, "{} is not there (no ../shared); the report benchmarks use {}\n", path,
                 kOwnTrace);
      path = kOwnTrace;
    }
    auto models = trace::ReadTraceFiles({path}, {});
    if (!models.ok()) {
      fmt::print(stderr, "{}\n", models.status().message());
      std::exit(1);
    }
    analysis::AnalyzeOptions o;
    auto a = analysis::AnalyzeAll(*models, o);
    return analysis::BuildAnalyzeReport(*models, a, o, path);
  }();
  return r;
}

void BM_Html_LargestAnalysis(benchmark::State& state) {
  const report::Report& r = LargestAnalysis();
  static const bench::ScratchPath out("report.html");
  size_t bytes = 0;
  for (auto _ : state) {
    std::string page = report::RenderHtmlString(r);
    bytes = page.size();
    if (!base::WriteFileAtomically(out.path(), page).ok()) state.SkipWithError("write failed");
  }
  state.counters["page_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_Html_LargestAnalysis)->Unit(benchmark::kMillisecond);

// `n` copies of one rank's summary, kept as `analyze` keeps thousands of ranks (the detail in a
// scratch file, read back as each rank's CSV rows are written).
struct ManyRanks {
  std::shared_ptr<analysis::DetailStore> detail = analysis::DetailStore::Open();
  analysis::Summaries all;
  report::Report report;
};

const ManyRanks& CopiesOfOneRank(int n) {
  static const ManyRanks* made = [n] {
    std::string path = std::string(TRAINPROF_SHARED_DIR) +
                       "/data/traces/modern/h100/gaunernst_bert-small-uncased__1016001.json.gz";
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) path = kOwnTrace;
    auto models = trace::ReadTraceFiles({path}, {});
    if (!models.ok()) {
      fmt::print(stderr, "{}\n", models.status().message());
      std::exit(1);
    }
    base::TuneMallocForCommand(static_cast<size_t>(n));  // as `analyze` of n files does
    auto* m = new ManyRanks;
    const analysis::AnalyzeOptions o;
    const analysis::RankSummary one = analysis::SummariseRank((*models)[0], o, path);
    m->all.options = o;
    for (int i = 0; i < n; ++i) {
      analysis::RankSummary s = one;
      s.info.rank = i;
      analysis::KeepUntilReport(m->detail, s);
      m->all.ranks.push_back(std::move(s.info));
      m->all.analyses.push_back(std::move(s.analysis));
    }
    m->report = analysis::BuildAnalyzeReport(m->all.ranks, m->all.analyses, o, path, true);
    return m;
  }();
  return *made;
}

void BM_Csv_ManyRanks(benchmark::State& state) {
  const ManyRanks& m = CopiesOfOneRank(Smoke() ? 20 : 1000);
  static const bench::ScratchPath out("csv");
  std::filesystem::create_directories(out.path());
  for (auto _ : state) {
    if (!report::WriteCsvFiles(m.report, out.path(), nullptr).ok())
      state.SkipWithError("write failed");
  }
  uintmax_t bytes = 0;
  for (const auto& f : std::filesystem::directory_iterator(out.path())) bytes += f.file_size();
  state.counters["csv_bytes"] = static_cast<double>(bytes);
  state.SetLabel(fmt::format("{} ranks", m.all.ranks.size()));
}
BENCHMARK(BM_Csv_ManyRanks)->Unit(benchmark::kMillisecond)->UseRealTime();

// A database of `n` runs with varied figures, made once per process.
const std::string& HistoryDb(int n) {
  static const std::string path = [n] {
    static const bench::ScratchPath scratch("runs.db");
    const char* keep = std::getenv("TRAINPROF_BENCH_KEEP_DB");
    std::string p = keep != nullptr ? keep : scratch.path();
    std::filesystem::remove(p);
    auto db = history::RunDb::Open(p, true);
    history::RunRecord rec;
    rec.kind = "profile", rec.name = "fashion-mnist", rec.host = "node-1";
    for (int i = 0; i < n; ++i) {
      rec.id = fmt::format("20261123T{:06d}Z-{:06x}", i, i);
      rec.created_utc = "2026-11-23T00:00:00Z";
      rec.git_commit = fmt::format("{:040x}", i / 10);
      rec.run_dir = fmt::format("/runs/{}", rec.id);
      for (size_t f = 0; f < rec.figures.values.size(); ++f) rec.figures.values[f] = i * 1.5 + f;
      (void)(*db)->Insert(rec);
    }
    return p;
  }();
  return path;
}

void BM_History_RunsList(benchmark::State& state) {
  const int n = Smoke() ? 200 : 10000;
  const std::string& path = HistoryDb(n);
  for (auto _ : state) {
    auto db = history::RunDb::Open(path, false);
    auto runs = (*db)->List({.last = static_cast<size_t>(state.range(0))});
    std::ostringstream text;
    report::Report r;
    report::Table& t = r.AddSection("runs", "Runs").AddTable("runs", "Runs", {{"id", "Id"}});
    for (const auto& run : *runs) t.rows.push_back({run.id});
    report::TerminalRenderer().Render(r, text);
    benchmark::DoNotOptimize(text.str());
  }
  state.SetLabel(fmt::format("{} runs stored", n));
}
BENCHMARK(BM_History_RunsList)->Arg(20)->Arg(0)->Unit(benchmark::kMillisecond);

// report.json's head for a run of N rank files: a meta line a file (files.N), nested as
// dotted keys. Linear in N (the JSON tree it replaced searched the keys before each one).
void BM_Json_HeadOfManyFiles(benchmark::State& state) {
  report::Report r;
  for (int64_t i = 0; i < state.range(0); ++i)
    r.AddMeta(fmt::format("files.{}", i), fmt::format("/scratch/run/rank{}.json", i), false);
  for (auto _ : state) {
    std::ostringstream out;
    report::JsonRenderer().Render(r, out);
    benchmark::DoNotOptimize(out.str());
  }
  state.SetComplexityN(state.range(0));
}
BENCHMARK(BM_Json_HeadOfManyFiles)
    ->Arg(10000)
    ->Arg(100000)
    ->Unit(benchmark::kMillisecond)
    ->Complexity();

}  // namespace
