// Many ranks (more than kInlineRanks): per-rank detail tables are in their CSV only, made rank by
// rank when streamed, with the same text as when held; report.json keeps the cross-rank summary.
// A few ranks keep every table whole (the goldens hold their layout).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "analysis/analyze.h"
#include "analysis/rank_summary.h"
#include "analysis/ranks/detail_store.h"
#include "analysis/sections/sections.h"
#include "report/csv.h"
#include "report/html.h"
#include "report/json.h"
#include "util/golden.h"

namespace trainprof::analysis {
namespace {

RankAnalysis Rank(int64_t r) {
  RankAnalysis a;
  for (int k = 0; k < 3; ++k) {
    a.lists->operators.push_back({.name = "aten::mm" + std::to_string(k),
                                  .calls = 2 + k,
                                  .device_self_ns = 1000 * (r + 1) + k});
    a.lists->kernels.push_back(
        {.name = "gemm" + std::to_string(k), .calls = 1, .total_ns = 500 * r + k});
    a.lists->operator_kernels.push_back(a.lists->kernels.back());
    a.lists->modules.push_back({.name = "Linear_" + std::to_string(k),
                                .path = "Net",
                                .depth = k == 0 ? 0 : 1,
                                .device_ns = 100 * (k + 1) + r});
  }
  a.tables->flops.has_shapes = true;
  a.lists->flops_operators.push_back(
      {.name = "aten::mm", .calls = 2, .flops = 4e9, .device_ns = 900 + r});
  for (int k = 0; k < 2; ++k)
    a.lists->flops_shapes.push_back({.name = "aten::mm",
                                     .dims = fmt::format("[[{}, 8], [8, 8]]", 16 << k),
                                     .calls = 1,
                                     .flops = 2e9,
                                     .device_ns = 400 * (k + 1) + r % 5});
  a.lists->candidates.push_back({.key = "low_utilization", .rank = r, .figure = 30.0 + r % 3});
  a.lists->operators_by_shape = a.lists->operators;
  a.tables->hta.top_kernels.push_back({.name = "gemm0", .count = 3, .sum_ns = 1500});
  a.lists->operators_by_shape[0].input_dims = "[[2, 3]]";
  DeviceMemory d;
  d.device = 0;
  d.series->curve = {{.ts_ns = 10, .allocated = 100}, {.ts_ns = 20, .allocated = 300 + r}};
  d.peak_allocated = 300 + r;
  d.curve_points = 2;
  d.role_points = 1;
  d.series->live_at_peak = {{.op = trace::kNoName, .bytes = 64}};
  a.memory.devices.push_back(d);
  a.memory.lists->allocations.push_back({.device = 0, .bytes = 64, .alloc_ns = 15});
  a.memory.lists->operators.push_back({.device = 0, .calls = 1});
  a.memory.events = 2;
  a.memory.devices[0].series->role_timeline = {{.time = 12, .bytes = {}}};
  a.memory.lists->op_names = {{7, "aten::empty"}};
  a.memory.lists->allocations.push_back({.device = 0, .op = 7, .bytes = 32, .alloc_ns = 16});
  a.lists->operators_by_stack = a.lists->operators;
  a.lists->operators_by_stack[1].call_stack = "train.py(12): step";
  a.tables->idle.idle_ns = 40 + r;
  a.gpu_ns = 10000;
  a.tables->idle.largest.push_back({.device = 0, .begin_ns = 5, .end_ns = 25 + r, .host = "sleep"});
  // The rank's tables (RankTables) and the roles at its peak, which wait with the detail too.
  RankTables& t = *a.tables;
  t.gpus.push_back({.device = 0,
                    .name = "NVIDIA H100 80GB HBM3",
                    .kernels = 3 + r,
                    .kernel_ns = 1500,
                    .utilization_pct = 40.0 + static_cast<double>(r % 7)});
  t.hta.temporal = {.idle_ns = 10 + r, .compute_ns = 60, .non_compute_ns = 30, .span_ns = 100 + r};
  t.hta.idle.push_back({.stream = 7, .ns = {5, 3 + r, 2}, .gaps = {1, 2, 1}});
  t.hta.launch.graph_launches = r % 2;  // two distinct launch notes
  t.categories.by[0] = {.ns = 1000 + r, .kernels = 3, .top_op = "aten::mm", .top_ns = 900};
  t.categories.total_ns = 2000;
  t.categories.by_kernel_ns = 100 * (r % 3);
  t.memcpy.push_back({.direction = "HtoD", .copies = 2, .bytes = 1 << 20, .dur_ns = 1000 + r});
  t.flops.steps.push_back({.step = "ProfilerStep#1", .flops = 1e9 * (r + 1), .dur_ns = 5000});
  t.flops.covered_ns = 900 + r;
  t.flops.uncovered = {{"aten::add", 100 + r}};
  DeviceSeries& series = *a.memory.devices[0].series;
  series.role_bytes.assign(memory::kRoles, 0);
  series.role_bytes[1] = 200 + r;
  series.rule_bytes = {0, 200 + r};
  return a;
}

struct Ranks {
  std::vector<RankInfo> infos;
  std::vector<RankAnalysis> analyses;
  AnalyzeOptions options;
};

Ranks MakeRanks(size_t n) {
  Ranks out;
  for (size_t i = 0; i < n; ++i) {
    out.infos.push_back({.path = "r" + std::to_string(i) + ".json", .rank = int64_t(i)});
    out.analyses.push_back(Rank(int64_t(i)));
  }
  return out;
}

std::string Csv(const report::Table& t) {
  std::ostringstream s;
  report::RenderCsvTable(t, s);
  return s.str();
}

const report::Table* Find(const report::Report& r, std::string_view id) {
  for (const report::Section& s : r.sections)
    if (const report::Table* t = s.FindTable(id)) return t;
  return nullptr;
}

constexpr const char* kPerRankTables[] = {
    "operator_view",
    "operator_view_by_shape",
    "kernel_view",
    "operator_kernel_view",
    "module_view",
    "memory_curves",
    "memory_live_at_peak",
    "memory_operators",
    "memory_allocations",
    "top_kernels",
    "memory_role_timeline",
    "operator_view_by_stack",
    "idle_gaps",
};

TEST(ManyRanks, PerRankTablesAreInTheirCsvOnlyStreamedOrHeldAlike) {
  const size_t n = kInlineRanks + 4;
  const Ranks in = MakeRanks(n);
  const report::Report held = BuildAnalyzeReport(in.infos, in.analyses, in.options, "x");
  const report::Report streamed =
      BuildAnalyzeReport(in.infos, in.analyses, in.options, "x", /*stream_rank_tables=*/true);
  for (const char* id : kPerRankTables) {
    const report::Table* h = Find(held, id);
    const report::Table* s = Find(streamed, id);
    ASSERT_NE(h, nullptr) << id;
    ASSERT_NE(s, nullptr) << id;
    EXPECT_TRUE(h->csv_only && s->csv_only) << id;
    EXPECT_NE(h->kind, report::TableKind::kTable) << id;  // never printed in the terminal
    EXPECT_FALSE(h->rows.empty()) << id;                  // held: the rows are there
    EXPECT_TRUE(s->rows.empty()) << id;                   // streamed: made when written
    EXPECT_EQ(Csv(*h), Csv(*s)) << id;
  }
  // Every rank's rows, in rank order.
  const std::string ops = Csv(*Find(streamed, "operator_view"));
  EXPECT_NE(ops.find(fmt::format("\n{},aten::mm2,", n - 1)), std::string::npos) << ops;
  EXPECT_EQ(std::count(ops.begin(), ops.end(), '\n'), static_cast<long>(1 + 3 * n));
  // One curve table for every rank and device, not one each.
  EXPECT_EQ(Find(streamed, "memory_curve_r0_gpu0"), nullptr);

  // report.json: the same for both, the per-rank tables named with their file and no rows.
  const std::string json = report::RenderJsonString(streamed);
  EXPECT_EQ(json, report::RenderJsonString(held));
  EXPECT_NE(json.find("\"rows_in\": \"operator_view.csv\""), std::string::npos);
  EXPECT_EQ(json.find("Linear_1"), std::string::npos) << "module_view's rows are not in it";
  // The cross-rank summaries stay: the top operators and the memory peak of every rank.
  const report::Table* top = Find(streamed, "operator_view_top");
  ASSERT_NE(top, nullptr);
  EXPECT_FALSE(top->csv_only);
  EXPECT_EQ(std::get<std::string>(top->rows[0][0]), std::to_string(n - 1));
  EXPECT_EQ(Find(streamed, "memory_peaks")->rows.size(), n);
  // Per operator and module over all ranks: ranks 0..n-1 have 1000 (r + 1) + k ns of aten::mmk.
  const report::Table* across = Find(streamed, "operator_view_across_ranks");
  ASSERT_NE(across, nullptr);
  ASSERT_EQ(across->rows.size(), 3u);
  EXPECT_EQ(across->rows[0],
            (std::vector<report::Value>{std::string("aten::mm2"), int64_t(n),
                                        (1000 * (n + 1) / 2.0 + 2) / 1e9, 1002 / 1e9,
                                        (1000.0 * n + 2) / 1e9, std::to_string(n - 1)}));
  const report::Table* modules = Find(streamed, "module_view_across_ranks");
  ASSERT_NE(modules, nullptr);
  ASSERT_EQ(modules->rows.size(), 1u);  // one path, "Net", three rows a rank
  EXPECT_EQ(modules->rows[0][modules->ColumnIndex("ranks")], report::Value(int64_t(n)));

  std::ostringstream html;
  report::HtmlRenderer().Render(streamed, html);
  EXPECT_NE(html.str().find("(rows in operator_view.csv)"), std::string::npos);
}

// The tables of a few rows a rank (the figures ranks are compared by) keep their rows, in
// report.json, up to kMaxJsonRowsManyRanks ranks; past that they are made a rank at a time as
// their CSV is written, with the same text.
TEST(ManyRanks, RankSummaryTablesPastAThousandRanksAreStreamed) {
  constexpr const char* kSummaryTables[] = {"memory_peaks",        "temporal_breakdown",
                                            "kernel_launch_stats", "step_breakdown_average",
                                            "mfu_steps",           "idle_causes"};
  for (size_t n : {kInlineRanks + 1, kMaxJsonRowsManyRanks + 1}) {
    Ranks in = MakeRanks(n);  // a step of FLOPs each (Rank)
    const report::Report held = BuildAnalyzeReport(in.infos, in.analyses, in.options, "x");
    const report::Report streamed =
        BuildAnalyzeReport(in.infos, in.analyses, in.options, "x", /*stream_rank_tables=*/true);
    for (const char* id : kSummaryTables) {
      const report::Table* h = Find(held, id);
      const report::Table* s = Find(streamed, id);
      ASSERT_NE(h, nullptr) << id;
      ASSERT_NE(s, nullptr) << id;
      const std::string csv = Csv(*s);
      EXPECT_EQ(Csv(*h), csv) << id;
      EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), static_cast<long>(1 + n)) << id;
      const bool past = n > kMaxJsonRowsManyRanks;
      EXPECT_EQ(s->csv_only, past) << id;
      EXPECT_EQ(s->rows.empty(), past) << id << ": made when written past a thousand ranks";
    }
  }
}

// Every table's CSV (rows made the way the CSV writer makes them: batches part by part) and
// report.json.
std::vector<std::string> Files(const report::Report& r) {
  std::vector<std::string> out = {report::RenderJsonString(r)};
  const std::string dir = testutil::FreshTempDir();  // its own: ctest runs tests side by side
  std::vector<std::string> written;
  EXPECT_TRUE(report::WriteCsvFiles(r, dir, &written).ok());
  std::sort(written.begin(), written.end());
  for (const std::string& name : written) {
    std::ifstream f(dir + "/" + name);
    out.push_back(name + "\n" + std::string(std::istreambuf_iterator<char>(f), {}));
  }
  return out;
}

// The files of the report of `in` with every rank whole (`kept`), and a copy of the ranks with
// their detail spilled to a new store (none: no scratch file could be made).
struct SpilledRanks {
  std::vector<std::string> kept;
  Ranks spilled;
  std::shared_ptr<DetailStore> store;
};
SpilledRanks Spilled(const Ranks& in) {
  SpilledRanks out{Files(BuildAnalyzeReport(in.infos, in.analyses, in.options, "x", true)), in,
                   DetailStore::Open()};
  if (out.store != nullptr)
    for (RankAnalysis& a : out.spilled.analyses) Spill(out.store, a);
  return out;
}

TEST(ManyRanks, DetailSpilledToAScratchFileGivesTheSameReport) {
  auto [kept, spilled, store] = Spilled(MakeRanks(kInlineRanks + 4));
  ASSERT_NE(store, nullptr);
  const RankAnalysis& a = spilled.analyses[3];
  EXPECT_FALSE(a.memory.devices[0].series);  // out of memory, its counts kept
  EXPECT_TRUE(!a.memory.lists && !a.lists);  // the lists' boxes let go
  EXPECT_EQ(a.memory.devices[0].curve_points, 2u);
  EXPECT_EQ(a.memory.devices[0].role_points, 1u);
  EXPECT_EQ(ShapeRows(a), 3);
  EXPECT_EQ(a.memory.devices[0].peak_allocated, 303);  // what views across ranks read stays
  const report::Report r =
      BuildAnalyzeReport(spilled.infos, spilled.analyses, spilled.options, "x", true);
  const std::vector<std::string> files = Files(r);
  ASSERT_EQ(files.size(), kept.size());
  for (size_t i = 0; i < files.size(); ++i) EXPECT_EQ(files[i], kept[i]);
  EXPECT_NE(std::ranges::find_if(files,
                                 [](const std::string& f) {
                                   return f.starts_with("memory_role_timeline.csv") &&
                                          f.find("\n11,") != f.npos;
                                 }),
            files.end());
  EXPECT_FALSE(a.memory.lists) << "let go again once written";
  EXPECT_FALSE(a.lists);
  EXPECT_NE(files[0].find("\"device_coverage_pct\""), std::string::npos);
}

// The bytes the open scratch file of the ranks' detail takes on disk (its blocks); -1: none open.
int64_t ScratchDiskBytes() {
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    if (std::filesystem::read_symlink(e.path(), ec).string().find("trainprof-detail-") ==
        std::string::npos)
      continue;
    struct stat st {};
    if (stat(e.path().c_str(), &st) == 0) return static_cast<int64_t>(st.st_blocks) * 512;
  }
  return -1;
}

// A process that writes the report once (trainprof analyze) lets each rank's record go once its
// rows are written: the scratch file gives its pages back, the files are the same, and the table
// read after them (the run history's step_breakdown) reads no detail. Without that word, the
// records stay for any later reader.
// Up to a thousand ranks the report reads each spilled rank's tables back once; a run with none
// spilled, or past a thousand ranks, reads none ahead.
TEST(ManyRanks, AThousandRanksTablesAreReadBackOnce) {
  auto [kept, spilled, store] = Spilled(MakeRanks(kInlineRanks + 4));
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(ReadTablesOnce(MakeRanks(3).analyses), nullptr) << "none spilled";
  const auto tables = ReadTablesOnce(spilled.analyses);
  ASSERT_NE(tables, nullptr);
  ASSERT_EQ(tables->size(), spilled.analyses.size());
  const RankTables& t = (*tables)[5];
  const RankTables whole = *Rank(5).tables;
  ASSERT_EQ(t.gpus.size(), 1u);
  EXPECT_EQ(t.gpus[0].kernels, whole.gpus[0].kernels);
  EXPECT_EQ(t.hta.temporal.span_ns, whole.hta.temporal.span_ns);
  EXPECT_EQ(t.idle.idle_ns, whole.idle.idle_ns);
  EXPECT_EQ(t.categories.by[0].ns, whole.categories.by[0].ns);
  EXPECT_EQ(t.flops.covered_ns, whole.flops.covered_ns);
  EXPECT_FALSE(spilled.analyses[5].tables) << "read into the copy, not the analysis";
  std::vector<RankAnalysis> many(kMaxJsonRowsManyRanks + 1, spilled.analyses[5]);
  EXPECT_EQ(ReadTablesOnce(many), nullptr) << "past a thousand, each reader reads its own";
}

TEST(ManyRanks, RecordsLetGoOnceWrittenLeaveTheSameFiles) {
  Ranks in = MakeRanks(kInlineRanks + 8);
  for (RankAnalysis& a : in.analyses) {
    for (int k = 0; k < 400; ++k)  // a record of ten pages or so
      a.lists->operators_by_shape.push_back(
          {.name = fmt::format("aten::op_with_a_long_name_{}", k)});
    a.overview.steps.push_back({.step = "ProfilerStep#3", .total_ns = 4000});
  }
  auto [kept, spilled, store] = Spilled(in);
  ASSERT_NE(store, nullptr);
  const int64_t before = ScratchDiskBytes();
  ASSERT_GT(before, static_cast<int64_t>(spilled.analyses.size()) * 8 * 4096);
  const report::Report r =
      BuildAnalyzeReport(spilled.infos, spilled.analyses, spilled.options, "x", true);
  EXPECT_EQ(Files(r), kept);
  EXPECT_EQ(ScratchDiskBytes(), before) << "no word given: every record stays";
  { DetailHold hold(spilled.analyses[2]); }

  RetireDetailOnceWritten(spilled.analyses);
  EXPECT_EQ(Files(r), kept);
  EXPECT_LT(ScratchDiskBytes(), before / 4) << "only the pages records share stay";
  const report::Table* steps = Find(r, "step_breakdown");
  ASSERT_NE(steps, nullptr);
  size_t rows = 0;
  steps->ForEachRowBlock([&](const auto& block) { rows += block.size(); });
  EXPECT_EQ(rows, spilled.analyses.size());
  EXPECT_DEATH({ DetailHold hold(spilled.analyses[2]); }, "read after its CSV rows were written");
}

TEST(ManyRanks, HoldsOfSpilledDetailNest) {
  RankAnalysis a = Rank(2);
  const std::shared_ptr<DetailStore> store = DetailStore::Open();
  ASSERT_NE(store, nullptr);
  Spill(store, a);
  {
    DetailHold outer(a);
    {
      DetailHold inner(a);
      EXPECT_EQ(a.memory.lists->allocations.size(), 2u);
    }
    EXPECT_EQ(a.memory.lists->allocations.size(), 2u) << "still held by the outer hold";
    EXPECT_EQ(a.tables->idle.largest.at(0).host, "sleep");
  }
  EXPECT_FALSE(a.memory.lists);
  // A spilled summary is written whole, as one never spilled.
  RankSummary whole{.analysis = Rank(2)}, out{.analysis = a};
  EXPECT_EQ(EncodeSummary(out), EncodeSummary(whole));
  Unspill(a);
  EXPECT_EQ(a.spilled.store, nullptr);
  EXPECT_EQ(a.memory.devices[0].series->curve.size(), 2u);
}

// A rank's detail let go after its rows are written is decoded into again by the next rank read
// on that thread: into the lists' memory, with none of the last rank's rows or fields left.
TEST(ManyRanks, DetailLetGoIsDecodedIntoAgainAsNew) {
  RankAnalysis big = Rank(4), small = Rank(5);
  for (int k = 0; k < 40; ++k) {
    big.lists->operators_by_shape.push_back({.name = std::string(40, 'x'), .input_dims = "[[1]]"});
    big.memory.lists->op_names.push_back({100 + k, "aten::a_rather_long_operator_name"});
  }
  big.tables->idle.largest[0].host = "a host range with a long name that the small rank lacks";
  small.lists->operators_by_shape.resize(1);
  const std::string small_whole = EncodeDetail(small);
  const std::shared_ptr<DetailStore> store = DetailStore::Open();
  ASSERT_NE(store, nullptr);
  Spill(store, big);
  Spill(store, small);
  { DetailHold hold(big); }  // read and let go: its lists kept for this thread
  DetailHold hold(small);
  EXPECT_EQ(EncodeDetail(small), small_whole);
  EXPECT_EQ(small.lists->operators_by_shape.size(), 1u);
  EXPECT_GE(small.memory.lists->op_names.capacity(), 41u) << "decoded into the big rank's lists";
}

// The first hold of a rank reads it back outside the store's lock; a hold that comes meanwhile
// from another thread waits until the whole detail is back (CsvBatch's two threads hold the
// same chunk from its two ends).
TEST(ManyRanks, HoldsFromTwoThreadsSeeTheWholeDetail) {
  Ranks in = MakeRanks(16);
  const std::shared_ptr<DetailStore> store = DetailStore::Open();
  ASSERT_NE(store, nullptr);
  for (RankAnalysis& a : in.analyses) Spill(store, a);
  std::atomic<int> partial{0};
  auto walk = [&](bool backwards) {
    for (int round = 0; round < 200; ++round) {
      for (size_t k = 0; k < in.analyses.size(); ++k) {
        RankAnalysis& a = in.analyses[backwards ? in.analyses.size() - 1 - k : k];
        DetailHold hold(a);
        const bool whole = a.memory.lists->allocations.size() == 2 &&
                           a.tables->idle.largest.size() == 1 &&
                           a.lists->operators_by_stack.size() == 3 && a.lists->modules.size() == 3;
        partial += whole ? 0 : 1;
      }
    }
  };
  std::thread other(walk, true);
  walk(false);
  other.join();
  EXPECT_EQ(partial.load(), 0);
  EXPECT_FALSE(in.analyses[5].memory.lists) << "let go after the last hold";
}

// The pass across ranks reads a spilled rank's modules alone (the first bytes of its record),
// stored here or given by another process, held or not: the modules the rank had.
// The lists a pass across ranks reads (AcrossList) are read back each alone, from a rank spilled
// here or given by another process, held or not.
TEST(ManyRanks, EachAcrossListIsReadBackAlone) {
  const RankAnalysis whole = Rank(3);
  ASSERT_FALSE(whole.lists->modules.empty() || whole.lists->operators.empty() ||
               whole.lists->kernels.empty() || whole.lists->flops_shapes.empty() ||
               whole.lists->candidates.empty());
  const std::shared_ptr<DetailStore> store = DetailStore::Open();
  ASSERT_NE(store, nullptr);
  RankAnalysis spilled = Rank(3), given = Rank(3);
  Spill(store, spilled);
  ASSERT_TRUE(GiveDetail(TakeDetail(given), store, given));
  auto lists = [](const RankAnalysis& a) {
    std::vector<ModuleRow> m;
    std::vector<OperatorRow> o;
    std::vector<KernelRow> k;
    std::vector<ShapeRow> s;
    std::vector<Candidate> c;
    std::string out;
    for (const ModuleRow& r : ModulesOf(a, m))
      out += fmt::format("{}/{} {}\n", r.path, r.name, r.device_ns);
    for (const OperatorRow& r : OperatorsOf(a, o))
      out += fmt::format("{} {}\n", r.name, r.device_self_ns);
    for (const KernelRow& r : KernelsOf(a, k)) out += fmt::format("{} {}\n", r.name, r.total_ns);
    for (const ShapeRow& r : ShapesOf(a, s)) out += fmt::format("{} {}\n", r.dims, r.device_ns);
    for (const Candidate& r : CandidatesOf(a, c)) out += fmt::format("{} {}\n", r.key, r.figure);
    RankTables t;
    const RankTables& tables = TablesOf(a, t);
    for (const GpuSummary& g : tables.gpus) out += fmt::format("{} {}\n", g.name, g.kernels);
    out += fmt::format("{} {} {} {}\n", tables.hta.temporal.idle_ns, tables.idle.idle_ns,
                       tables.categories.by[0].ns, tables.flops.steps.at(0).flops);
    for (const KernelStats& k : tables.hta.top_kernels) out += fmt::format("{}\n", k.name);
    return out;
  };
  const std::string expected = lists(whole);
  for (RankAnalysis* a : {&spilled, &given}) {
    ASSERT_EQ(a->spilled.store, store);
    int64_t begin = 0;
    for (int64_t end : a->spilled.list_ends) {
      EXPECT_GT(end, begin);
      begin = end;
    }
    EXPECT_LT(begin, a->spilled.bytes) << "the lists alone, not the record";
    EXPECT_EQ(lists(*a), expected);
    EXPECT_TRUE(!a->lists && !a->tables) << "read into the scratch, not the analysis";
    EXPECT_FALSE(a->memory.devices[0].series) << "the roles wait with the detail";
    EXPECT_EQ(FlopsRows(*a), 1);
    DetailHold hold(*a);
    EXPECT_EQ(lists(*a), expected);
  }
  std::vector<OperatorRow> unused;
  EXPECT_EQ(&OperatorsOf(whole, unused), &whole.lists->operators) << "not spilled: its own";
}

// A rank's top rows across ranks are those a stable sort puts first: ties go to the lower rank,
// then to the earlier row.
TEST(ManyRanks, TopRowsAreThoseAStableSortPutsFirst) {
  TopRows<KernelRow> top(
      3, [](const KernelRow& a, const KernelRow& b) { return a.total_ns > b.total_ns; });
  top.Add({{.name = "a", .total_ns = 5}, {.name = "b", .total_ns = 9}}, 0);
  top.Add({}, 1);
  top.Add(
      {{.name = "c", .total_ns = 9}, {.name = "d", .total_ns = 5}, {.name = "e", .total_ns = 7}},
      2);
  top.Add({{.name = "f", .total_ns = 7}}, 3);
  std::string got;
  for (const auto& [row, rank] : top.rows()) got += fmt::format("{}{} ", row.name, rank);
  EXPECT_EQ(got, "b0 c2 e2 ");
  TopRows<KernelRow> none(3, [](const KernelRow&, const KernelRow&) { return false; });
  none.Add({}, 0);
  EXPECT_FALSE(none.any());
  EXPECT_TRUE(top.any());
}

// --mpi's other processes send a rank's detail apart (TakeDetail) and process 0 stores it as
// it came (GiveDetail): the summary reads the same as the rank it left.
TEST(ManyRanks, DetailTakenApartIsGivenBackWholeOrSpilled) {
  const RankSummary whole{.analysis = Rank(2)};
  const std::shared_ptr<DetailStore> store = DetailStore::Open();
  ASSERT_NE(store, nullptr);
  for (const std::shared_ptr<DetailStore>& to : {std::shared_ptr<DetailStore>(), store}) {
    RankSummary sent{.analysis = Rank(2)};
    const std::string detail = TakeDetail(sent.analysis);
    EXPECT_FALSE(sent.analysis.memory.lists);
    EXPECT_FALSE(sent.analysis.lists);
    StatusOr<RankSummary> got = DecodeSummary(EncodeSummary(sent));
    ASSERT_TRUE(got.ok());
    ASSERT_TRUE(GiveDetail(detail, to, got->analysis));
    EXPECT_EQ(got->analysis.spilled.store, to);
    if (to != nullptr) {
      EXPECT_FALSE(got->analysis.memory.lists) << "spilled";
      EXPECT_EQ(got->analysis.memory.devices[0].curve_points, 2u);
      EXPECT_EQ(ModuleRows(got->analysis), ModuleRows(whole.analysis));
    }
    EXPECT_EQ(EncodeSummary(*got), EncodeSummary(whole));
  }
  // Bytes cut short, or counts for another number of devices, are refused.
  RankSummary sent{.analysis = Rank(2)};
  const std::string detail = TakeDetail(sent.analysis);
  RankAnalysis fresh = sent.analysis;
  EXPECT_FALSE(GiveDetail(std::string_view(detail).substr(0, 5), store, fresh));
  EXPECT_FALSE(GiveDetail(std::string_view(detail).substr(0, detail.size() - 3), nullptr, fresh));
  fresh.memory.devices.emplace_back();
  EXPECT_FALSE(GiveDetail(detail, store, fresh));
}

TEST(ManyRanks, AFewRanksKeepEveryTableWhole) {
  const Ranks in = MakeRanks(kInlineRanks);
  const report::Report r =
      BuildAnalyzeReport(in.infos, in.analyses, in.options, "x", /*stream_rank_tables=*/true);
  for (const char* id : {"operator_view", "module_view", "memory_allocations"}) {
    const report::Table* t = Find(r, id);
    ASSERT_NE(t, nullptr) << id;
    EXPECT_FALSE(t->csv_only) << id;
    EXPECT_EQ(t->source, nullptr) << id;
    EXPECT_FALSE(t->rows.empty()) << id;
  }
  EXPECT_NE(Find(r, "memory_curve_r0_gpu0"), nullptr);
  EXPECT_EQ(Find(r, "memory_curves"), nullptr);
  EXPECT_EQ(Find(r, "operator_view_across_ranks"), nullptr);
  EXPECT_EQ(Find(r, "module_view_across_ranks"), nullptr);
}

TEST(ManyRanks, RankLabelsNameTheFileWhenTwoShareARank) {
  Ranks in = MakeRanks(kInlineRanks + 1);
  in.infos[1].rank = 0;
  in.infos[1].path = "dir/again.json";
  const report::Report r =
      BuildAnalyzeReport(in.infos, in.analyses, in.options, "x", /*stream_rank_tables=*/true);
  const std::string ops = Csv(*Find(r, "operator_view"));
  EXPECT_NE(ops.find("\n0 (again.json),aten::mm0,"), std::string::npos) << ops;
  EXPECT_NE(ops.find("\n0 (r0.json),aten::mm0,"), std::string::npos) << ops;
}

TEST(ManyRanks, EachDistinctRankNoteOnceNamingHowManyShareIt) {
  auto a_or_b = [](size_t i) -> std::string { return i == 3 ? "B" : "A"; };
  auto notes_of = [](size_t n, const std::function<std::string(size_t)>& peak) {
    const Ranks r = MakeRanks(n);
    const CollectivesResult none;
    const CrossRankPath no_path;
    auto labels = std::make_shared<std::vector<std::string>>();
    for (size_t i = 0; i < n; ++i) labels->push_back(std::to_string(i));
    const AnalyzeInput labelled{r.infos, r.analyses, r.options, none, no_path, labels, false};
    std::vector<std::string> notes;
    AddRankNotes(
        notes, labelled,
        [&](size_t i) {
          if (i == 5) return std::string();
          return fmt::format("Rank {}: peak {}.", kRankMark, peak(i));
        },
        "peaks.csv");
    return notes;
  };
  EXPECT_EQ(notes_of(kInlineRanks + 4, a_or_b),
            (std::vector<std::string>{"Rank 0 and 9 other ranks: peak A.", "Rank 3: peak B."}));
  const std::vector<std::string> few = notes_of(4, a_or_b);
  EXPECT_EQ(few, (std::vector<std::string>{"Rank 0: peak A.", "Rank 1: peak A.", "Rank 2: peak A.",
                                           "Rank 3: peak B."}));
  // Notes that differ by a figure: the first kMostRankNotes, then one for the rest (rank 5 has
  // none; ranks 10 and 11 share one).
  const std::vector<std::string> many =
      notes_of(20, [](size_t i) { return std::to_string(i == 11 ? 10 : i); });
  ASSERT_EQ(many.size(), kMostRankNotes + 1);
  EXPECT_EQ(many[0], "Rank 0: peak 0.");
  EXPECT_EQ(many[7], "Rank 8: peak 8.");
  EXPECT_EQ(many[8],
            "Rank 9 and 10 other ranks: the same notes as above, with figures of their own "
            "(peaks.csv).");
}

}  // namespace
}  // namespace trainprof::analysis
