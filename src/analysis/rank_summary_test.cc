// The .tpsum codec and the combining of summaries, on hand-made summaries. That a merged report
// equals the whole one is tested end to end in tests/merge_cli_test.cc.
#include "analysis/rank_summary.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace trainprof::analysis {
namespace {

RankSummary Sample(int64_t rank) {
  RankSummary s;
  s.options.steps = StepsMode::kAll;
  s.options.dataloader_patterns = {"load_batch"};
  s.options.critical_path = "forward:1";
  s.input = "traces/";
  s.info.path = "traces/rank" + std::to_string(rank) + ".json";
  s.info.rank = rank;
  s.info.host_name = "node-1";
  s.info.devices =
      std::vector<trace::DeviceInfo>{{.id = 0, .name = "NVIDIA H100", .total_memory_bytes = 80}};
  s.info.peak_allocated_bytes = {{0, 1234}};
  s.info.diagnostics.push_back({base::DiagnosticId::kRankUnknown, 1, "no rank"});
  RankAnalysis& a = s.analysis;
  a.steps.steps.push_back({.name = "ProfilerStep#3", .number = 3, .begin_ns = 10, .end_ns = 90});
  a.tables->gpus.push_back({.device = 0, .utilization_pct = 51.5, .occupancy_pct = 12.25});
  a.tables->gpus[0].utilization_curve = {{1, 0.5}, {2, 0.0}};
  a.tables->hta.kernel_types = {{"COMPUTATION", 42}};
  a.comm_names = {"", "0", "allreduce"};
  a.comm_ops.push_back({.key = 1, .bytes = 4096, .group = 1, .type = 2, .key_kind = CommKey::kSeq});
  a.lists->candidates.push_back({.key = "dataloader", .rank = rank, .figure = 12.5});
  CpWindow w;
  w.label = "forward:1";
  w.category_ns[1] = 7;
  w.edges.push_back({.from_ns = 1, .to_ns = 5, .type = CpEdge::kSync, .name = "cudaFree"});
  a.critical_paths.push_back(w);
  return s;
}

TEST(RankSummary, RoundTripsEveryField) {
  const RankSummary s = Sample(3);
  const std::string bytes = EncodeSummary(s);
  StatusOr<RankSummary> back = DecodeSummary(bytes);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(EncodeSummary(*back), bytes);
  EXPECT_EQ(back->info.path, "traces/rank3.json");
  EXPECT_EQ(back->options.critical_path, "forward:1");
  ASSERT_EQ(back->analysis.tables->gpus.size(), 1u);
  EXPECT_EQ(back->analysis.tables->gpus[0].occupancy_pct, 12.25);
  EXPECT_FALSE(back->analysis.tables->gpus[0].sm_efficiency_pct.has_value());
  EXPECT_EQ(back->analysis.critical_paths[0].edges[0].type, CpEdge::kSync);
  EXPECT_EQ(back->analysis.comm_ops[0].bytes, 4096);
  EXPECT_EQ(back->analysis.comm_names[back->analysis.comm_ops[0].type], "allreduce");
  EXPECT_EQ(CommKeyText(back->analysis.comm_ops[0], back->analysis.comm_names), "seq 1");
  ASSERT_EQ(back->info.devices.size(), 1u);
  EXPECT_EQ(back->info.devices.front().name, "NVIDIA H100");
  EXPECT_EQ(&back->info.devices.list(), &s.info.devices.list()) << "one list for both";
}

// Ranks that list the same devices share one list; others, and none, are their own.
TEST(RankSummary, RanksListingTheSameDevicesShareOneList) {
  const std::vector<trace::DeviceInfo> node = {{.id = 0, .name = "NVIDIA H100"},
                                               {.id = 1, .name = "NVIDIA H100"}};
  std::vector<trace::DeviceInfo> other = node;
  other[1].num_sms = 132;
  const SharedDevices a(node), b(node), c(other), none;
  EXPECT_EQ(&a.list(), &b.list());
  EXPECT_NE(&a.list(), &c.list());
  EXPECT_EQ(c.list()[1].num_sms, 132);
  EXPECT_TRUE(none.empty());
  EXPECT_TRUE(SharedDevices(std::vector<trace::DeviceInfo>{}).empty());
}

// A summary whose tables wait in a scratch file (--mpi's processes send them with the detail)
// is written without them and read back without them; a row not yet read holds none.
TEST(RankSummary, TablesAbsentStayAbsent) {
  RankSummary s = Sample(1);
  s.analysis.tables.reset();
  StatusOr<RankSummary> back = DecodeSummary(EncodeSummary(s));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_FALSE(back->analysis.tables);
  EXPECT_EQ(back->analysis.steps.steps.size(), 1u);
  const std::string whole = EncodeSummary(Sample(1));
  EXPECT_GT(whole.size(), EncodeSummary(s).size());
  RankResults rows(2);
  EXPECT_FALSE(rows.analysis(0).tables);
  rows.Set(1, Sample(1));
  EXPECT_EQ(rows.analysis(1).tables->gpus.size(), 1u);
}

TEST(RankSummary, RefusesWhatIsNotAWholeSummaryOfThisVersion) {
  const std::string bytes = EncodeSummary(Sample(0));
  for (size_t cut : {size_t{0}, size_t{5}, size_t{20}, bytes.size() / 2, bytes.size() - 1}) {
    StatusOr<RankSummary> s = DecodeSummary(bytes.substr(0, cut));
    EXPECT_FALSE(s.ok()) << cut;
  }
  EXPECT_NE(DecodeSummary("{}").status().message().find("not a trainprof rank summary"),
            std::string::npos);
  EXPECT_NE(DecodeSummary(bytes + "x").status().message().find("after its end"), std::string::npos);
  std::string other = bytes;
  other[9] = static_cast<char>(kSummaryVersion + 1);
  EXPECT_NE(DecodeSummary(other).status().message().find("version"), std::string::npos);
  // A corrupt length asks for more than the file holds: refused, not allocated.
  std::string huge = bytes;
  for (size_t i = 59; i < 67; ++i) huge[i] = '\xff';  // the length of dataloader_patterns
  EXPECT_FALSE(DecodeSummary(huge).ok());
  // A communication kernel naming a name its rank does not hold.
  RankSummary bad = Sample(0);
  bad.analysis.comm_ops[0].group = 7;
  EXPECT_NE(DecodeSummary(EncodeSummary(bad)).status().message().find("out of range"),
            std::string::npos);
}

// The summaries as one run's rows, in this order.
RankResults Rows(const std::vector<RankSummary>& all) {
  RankResults rows(all.size());
  for (size_t i = 0; i < all.size(); ++i) rows.Set(i, all[i]);
  return rows;
}

TEST(RankSummary, CombinesInRankOrderAndMarksDuplicates) {
  std::vector<RankSummary> all = {Sample(2), Sample(0), Sample(2)};
  all[2].info.path = "other/rank2.json";
  StatusOr<Summaries> c = CombineSummaries(Rows(all), "fallback");
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_EQ(c->ranks.size(), 3u);
  EXPECT_EQ(c->ranks[0].rank, 0);
  EXPECT_EQ(c->ranks[1].path, "traces/rank2.json");  // stable: file order kept within a rank
  EXPECT_EQ(c->ranks[1].diagnostics.back().name(), "duplicate_rank");
  EXPECT_EQ(c->ranks[0].diagnostics.back().name(), "rank_unknown");
  EXPECT_EQ(c->input, "traces/");
  all[1].input = "elsewhere/";
  EXPECT_EQ(CombineSummaries(Rows(all), "fallback")->input, "fallback");
  all[1].options.steps = StepsMode::kComplete;
  StatusOr<Summaries> bad = CombineSummaries(Rows(all), "x");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("other options"), std::string::npos);
  EXPECT_NE(bad.status().message().find("traces/rank0.json was analysed with other options "
                                        "than traces/rank2.json"),
            std::string::npos)
      << bad.status().message();
  EXPECT_FALSE(CombineSummaries(RankResults{}, "x").ok());
  RankResults none(2);
  none.Set(1, InvalidArgument("unreadable"));
  EXPECT_EQ(CombineSummaries(std::move(none), "x").status().message(), "no rank summary to merge");
}

TEST(RankSummary, RowsArePutInRankOrderInPlaceWhateverTheFileOrder) {
  // Every order of five files with ranks 0..4 (cycles of every length), each analysis telling
  // its rank: each row lands with its own analysis; failed rows are cut first.
  std::vector<int> ranks = {0, 1, 2, 3, 4};
  do {
    RankResults rows(ranks.size() + 1);
    for (size_t i = 0; i < ranks.size(); ++i) {
      RankSummary s = Sample(ranks[i]);
      s.analysis.gpu_ns = 1000 + ranks[i];
      rows.Set(i < 2 ? i : i + 1, std::move(s));
    }
    rows.Set(2, InvalidArgument("unreadable"));
    StatusOr<Summaries> c = CombineSummaries(std::move(rows), "x");
    ASSERT_TRUE(c.ok()) << c.status().message();
    ASSERT_EQ(c->ranks.size(), 5u);
    for (size_t k = 0; k < 5; ++k) {
      EXPECT_EQ(c->ranks[k].rank, static_cast<int>(k));
      EXPECT_EQ(c->analyses[k].gpu_ns, 1000 + static_cast<int64_t>(k));
    }
  } while (std::next_permutation(ranks.begin(), ranks.end()));
}

TEST(RankSummary, ARowLentAsASummaryComesBackWhole) {
  RankSummary a = Sample(3);
  RankResults rows = Rows({a});
  std::string lent, again;
  rows.WithSummary(0, [&](RankSummary& s) { lent = EncodeSummary(s); });
  EXPECT_EQ(lent, EncodeSummary(a));  // options and input with the row
  rows.WithSummary(0, [&](RankSummary& s) { again = EncodeSummary(s); });
  EXPECT_EQ(again, EncodeSummary(a));
}

}  // namespace
}  // namespace trainprof::analysis
