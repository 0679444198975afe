// Collectives across ranks, clock offsets, the distributed view and the straggler finding, on
// generated multi-rank traces whose answers follow from how they were built (util/trace_gen.h),
// and on the real two-rank trace_filter when ../shared/data/traces is beside the checkout.
//
// The scenario: each step, a rank computes for its own time and then all-reduces; every rank's
// all-reduce ends at the same true moment (the last rank to arrive sets it), each rank's clock
// has its own offset. So the transfer is the last rank's all-reduce time, every other rank
// waits for the difference in compute, and the offsets are the clock skews.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "analysis/analyze.h"
#include "analysis/ranks/collectives.h"
#include "analysis/ranks/detail_store.h"
#include "analysis/ranks/distributed.h"
#include "report/json.h"
#include "trace/kineto/kineto_reader.h"
#include "util/generated_ranks.h"
#include "util/golden.h"
#include "util/trace_gen.h"

namespace trainprof {
namespace {

using testutil::GenGpuOp;
using testutil::GenRank;
using testutil::GenStep;
using testutil::GenTrace;

constexpr int64_t kUs = 1000;
constexpr int64_t kTransferNs = 300 * kUs;
constexpr int64_t kStepNs = 3000 * kUs;
constexpr int64_t kNelems = 1 << 20;  // floats: 4 MiB
const char* kGemm = "sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x32_kernel";
const char* kAllReduce = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, ncclWork*)";

struct Scenario {
  std::vector<int64_t> compute_ns;  // per rank
  std::vector<int64_t> jitter_ns;   // rank 1's all-reduce end, per step (clock noise)
  int steps = 3;
  bool seq = true;
};

int64_t Skew(int64_t rank) { return rank * 1'234'567 - 2'000'000; }

GenTrace RankSpec(const Scenario& sc, int64_t rank) {
  int64_t latest = *std::max_element(sc.compute_ns.begin(), sc.compute_ns.end());
  GenTrace t;
  t.world_size = static_cast<int64_t>(sc.compute_ns.size());
  for (int s = 0; s < sc.steps; ++s) {
    GenStep st{.host_dur_ns = kStepNs};
    int64_t c = sc.compute_ns[static_cast<size_t>(rank)];
    st.gpu_ops.push_back(
        {.name = kGemm, .start_ns = 100 * kUs, .dur_ns = c, .launch_delay_ns = 50 * kUs});
    GenGpuOp ar{.name = kAllReduce,
                .stream = 9,
                .start_ns = 100 * kUs + c,
                .dur_ns = latest - c + kTransferNs,
                .launch_delay_ns = 60 * kUs};
    if (rank == 1 && static_cast<size_t>(s) < sc.jitter_ns.size()) ar.dur_ns += sc.jitter_ns[s];
    ar.collective = testutil::GenCollective{
        .seq = sc.seq ? s : -1, .nelems = kNelems, .group_size = t.world_size};
    st.gpu_ops.push_back(ar);
    t.steps.push_back(st);
  }
  return t;
}

using Analysed = testutil::AnalysedRanks;

Analysed Analyze(const Scenario& sc) {
  std::vector<std::pair<GenTrace, GenRank>> ranks;
  for (int64_t r = 0; r < static_cast<int64_t>(sc.compute_ns.size()); ++r)
    ranks.emplace_back(RankSpec(sc, r), GenRank{.rank = r, .skew_ns = Skew(r)});
  return testutil::AnalyseGeneratedRanks(ranks);
}

std::vector<std::string> Findings(const report::Report& r) {
  std::vector<std::string> out;
  for (const auto& f : r.FindSection("recommendations")->findings) out.push_back(f.text);
  return out;
}

TEST(Distributed, MatchesCollectivesAndSplitsWaitFromTransfer) {
  Scenario sc{.compute_ns = {1000 * kUs, 1000 * kUs, 1200 * kUs, 1000 * kUs}};
  Analysed r = Analyze(sc);
  ASSERT_EQ(r.models.size(), 4u);
  analysis::CollectivesResult c = analysis::MatchCollectives(r.models);
  EXPECT_TRUE(c.by_sequence);
  EXPECT_EQ(c.unmatched, 0);
  ASSERT_EQ(c.collectives.size(), 3u);
  for (const analysis::Collective& x : c.collectives) {
    EXPECT_EQ(x.group, "0");
    EXPECT_EQ(x.type, "allreduce");
    EXPECT_EQ(x.bytes, kNelems * 4);
    ASSERT_EQ(x.ops.size(), 4u);
    EXPECT_EQ(x.transfer_ns, kTransferNs);
    EXPECT_EQ(x.ops[x.late].rank, 2);
    for (size_t i = 0; i < 4; ++i) EXPECT_EQ(x.wait_ns(i), i == 2 ? 0 : 200 * kUs) << i;
    EXPECT_EQ(x.caused_wait_ns(), 3 * 200 * kUs);
    double algbw = static_cast<double>(kNelems * 4) / 300e-6;
    EXPECT_DOUBLE_EQ(x.algbw(), algbw);
    EXPECT_DOUBLE_EQ(x.busbw(), algbw * 2 * 3 / 4);
  }
  // Every collective ends at the same true time, so the offsets are the skews, exactly.
  ASSERT_EQ(c.offsets.size(), 4u);
  for (int64_t i = 0; i < 4; ++i) {
    EXPECT_EQ(c.offsets[i].offset_ns, Skew(i) - Skew(0)) << i;
    EXPECT_EQ(c.offsets[i].residual_max_ns, 0);
    EXPECT_EQ(c.offsets[i].samples, 3);
  }
}

TEST(Distributed, StepBreakdownMatchesTheGenerator) {
  Analysed r = Analyze({.compute_ns = {1000 * kUs, 1000 * kUs, 1200 * kUs, 1000 * kUs}});
  ASSERT_EQ(r.models.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    std::vector<analysis::CommBreakdown> b =
        analysis::ComputeCommBreakdowns(r.models[i], r.an[i].steps);
    ASSERT_EQ(b.size(), r.expected[i].steps.size());
    for (size_t s = 0; s < b.size(); ++s) {
      const testutil::ExpectedStep& e = r.expected[i].steps[s];
      EXPECT_EQ(b[s].overlap_ns, e.comm_overlap_ns);
      EXPECT_EQ(b[s].computation_ns, e.kernel_ns - e.communication_ns);
      EXPECT_EQ(b[s].communication_ns, e.communication_ns - e.comm_overlap_ns);
      EXPECT_EQ(b[s].other_ns, e.dur_ns - e.kernel_ns);
      EXPECT_EQ(b[s].communication_ns, (i == 2 ? 300 : 500) * kUs) << i;
    }
  }
  const report::Section* d = r.report.FindSection("distributed");
  ASSERT_NE(d, nullptr);
  const report::Table* t = d->FindTable("distributed_step_breakdown");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->rows.size(), 4u * 3u);
}

TEST(Distributed, NamesTheStragglerOnceWithTheWaitItCauses) {
  Analysed r = Analyze({.compute_ns = {1000 * kUs, 1000 * kUs, 1200 * kUs, 1000 * kUs}});
  ASSERT_EQ(r.models.size(), 4u);
  // 200 µs per step for each waiting rank, of a 3 ms step: 6.7 %. Ranked among the other
  // findings by the step time it costs.
  std::vector<std::string> f = Findings(r.report);
  auto it = std::find_if(f.begin(), f.end(), [](const std::string& x) {
    return x.find("straggler") != std::string::npos;
  });
  ASSERT_NE(it, f.end());
  // Its cause from its own trace: the GEMM runs 1.2 ms against the others' 1.0 ms.
  EXPECT_EQ(it->rfind("Rank 2: rank 2 is the straggler: rank 2 arrives last at 100% of its "
                      "collectives (allreduce ×3), and the others wait for it 6.7% of the median "
                      "step (threshold 5%) (0.200 ms a step against a 3.000 ms step; its GPU "
                      "compute runs 20.0% longer than the median rank's (1.200 against 1.000 ms a "
                      "step); sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x... grew "
                      "most (+0.200 ms a step): 20.0% longer per call with as many calls",
                      0),
            0u)
      << *it;
  int straggler = 0;
  for (const std::string& x : f) straggler += x.find("is the straggler") != std::string::npos;
  EXPECT_EQ(straggler, 1);
  const report::Table* late = r.report.FindSection("distributed")->FindTable("wait_by_late_rank");
  ASSERT_NE(late, nullptr);
  EXPECT_EQ(std::get<int64_t>(late->rows[2][late->ColumnIndex("late_at")]), 3);
  EXPECT_NEAR(report::AsNumber(late->rows[2][late->ColumnIndex("caused_wait_s")]), 9 * 200e-6,
              1e-12);
  EXPECT_EQ(std::get<int64_t>(late->rows[0][late->ColumnIndex("late_at")]), 0);
}

// Past the 8 ranks a report holds whole, each rank's kernels and candidates wait in a scratch
// file (analysis/ranks/detail_store.h): the straggler, its grown kernel and the ranks that wait
// for it are read back a rank at a time, and said as from ranks held whole.
TEST(Distributed, AStragglerAmongManySpilledRanksIsNamedAsAmongHeldOnes) {
  std::vector<int64_t> compute(12, 1000 * kUs);
  compute[5] = 1200 * kUs;
  Analysed r = Analyze({.compute_ns = compute});
  ASSERT_EQ(r.an.size(), 12u);
  const std::shared_ptr<analysis::DetailStore> store = analysis::DetailStore::Open();
  ASSERT_NE(store, nullptr);
  std::vector<analysis::RankAnalysis> spilled = r.an;
  for (analysis::RankAnalysis& a : spilled) analysis::Spill(store, a);
  ASSERT_FALSE(spilled[5].lists);
  const analysis::AnalyzeOptions o;
  const report::Report held = analysis::BuildAnalyzeReport(r.models, r.an, o, "x");
  const report::Report from_store = analysis::BuildAnalyzeReport(r.models, spilled, o, "x");
  const std::vector<std::string> f = Findings(from_store);
  EXPECT_EQ(f, Findings(held));
  auto has = [&](const std::string& text) {
    return std::ranges::any_of(f, [&](const std::string& x) { return x.find(text) != x.npos; });
  };
  EXPECT_TRUE(has("Rank 5: rank 5 is the straggler")) << ::testing::PrintToString(f);
  EXPECT_TRUE(has("grew most")) << "its grown kernel, from every rank's kernels";
  EXPECT_TRUE(has("waiting in collectives for rank 5")) << "the victims, named";
  EXPECT_EQ(report::RenderJsonString(from_store), report::RenderJsonString(held));
}

TEST(Distributed, NoStragglerWhenRanksArriveTogether) {
  Analysed r = Analyze({.compute_ns = {1000 * kUs, 1000 * kUs, 1010 * kUs, 1000 * kUs}});
  ASSERT_EQ(r.models.size(), 4u);
  for (const std::string& x : Findings(r.report))
    EXPECT_EQ(x.find("straggler"), std::string::npos) << x;
}

TEST(Distributed, FallsBackToOrderOfIssueAndReportsTheResidual) {
  Scenario sc{
      .compute_ns = {1000 * kUs, 1100 * kUs}, .jitter_ns = {0, 1 * kUs, -1 * kUs}, .seq = false};
  Analysed r = Analyze(sc);
  ASSERT_EQ(r.models.size(), 2u);
  analysis::CollectivesResult c = analysis::MatchCollectives(r.models);
  EXPECT_FALSE(c.by_sequence);
  ASSERT_EQ(c.collectives.size(), 3u);
  EXPECT_EQ(c.collectives[1].match, "issue 1");
  for (const analysis::Collective& x : c.collectives) EXPECT_EQ(x.ops[x.late].rank, 1);
  // Rank 1 ends 0, +1 and -1 µs off: the median keeps the skew, the residual shows the noise.
  EXPECT_EQ(c.offsets[1].offset_ns, Skew(1) - Skew(0));
  EXPECT_EQ(c.offsets[1].residual_max_ns, 1 * kUs);
  EXPECT_NEAR(c.offsets[1].residual_rms_ns, std::sqrt(2.0 / 3.0) * kUs, 1e-6);
  // The transfer is the late rank's duration, with its jitter.
  EXPECT_EQ(c.collectives[1].transfer_ns, kTransferNs + 1 * kUs);
}

// The real two-rank folder: old NCCL kernels (ncclKernel_SendRecv) without args, so the
// collectives are matched by order of issue.
TEST(Distributed, TraceFilterTwoRealRanks) {
  TRAINPROF_SKIP_WITHOUT_SHARED_TRACES();
  std::string dir = std::string(TRAINPROF_SHARED_DIR) + "/data/traces/trace_filter/";
  std::vector<trace::TraceModel> models;
  for (const char* f : {"sampled_rank-0.json.gz", "sampled_rank-1.json.gz"}) {
    auto m = trace::ReadTraceFile(dir + f, {});
    ASSERT_TRUE(m.ok()) << m.status().message();
    models.push_back(std::move(*m));
  }
  analysis::CollectivesResult c = analysis::MatchCollectives(models);
  EXPECT_FALSE(c.by_sequence);
  EXPECT_EQ(c.unmatched, 0);
  ASSERT_EQ(c.collectives.size(), 10u);  // 10 NCCL kernels on each rank
  for (const analysis::Collective& x : c.collectives) {
    ASSERT_EQ(x.ops.size(), 2u);
    EXPECT_EQ(x.ops[0].rank, 0);
    EXPECT_EQ(x.ops[1].rank, 1);
    EXPECT_EQ(x.type, "sendrecv");
    EXPECT_EQ(x.bytes, -1);  // no message size in these traces
  }
  ASSERT_EQ(c.offsets.size(), 2u);
  EXPECT_EQ(c.offsets[1].samples, 10);
  analysis::AnalyzeOptions o;
  o.threads = 1;
  auto an = analysis::AnalyzeAll(models, o);
  report::Report rep = analysis::BuildAnalyzeReport(models, an, o, dir);
  const report::Section* d = rep.FindSection("distributed");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->FindTable("collectives")->rows.size(), 10u);
  // These are 2 of 128 ranks, sampled: their send/recv kernels belong to different all-to-all
  // groups, so order of issue pairs kernels that are not one collective. The ends disagree by
  // far more than a transfer, which the section says, and no straggler is named from them.
  EXPECT_GT(static_cast<double>(c.offsets[1].residual_max_ns),
            static_cast<double>(c.collectives[0].transfer_ns));
  bool doubt = false;
  for (const std::string& n : d->notes) doubt |= n.find("probably not") != std::string::npos;
  EXPECT_TRUE(doubt);
  const std::vector<analysis::RankInfo> infos = analysis::InfosOf(models);
  EXPECT_TRUE(
      analysis::StragglerCandidates(infos, an, c, analysis::ComputeCrossRankPath(infos, an, c))
          .empty());
}

// nccl_parser_config: today's kernels carry the collective's args, which the reader keeps.
TEST(Distributed, ReaderKeepsTheCollectiveArgs) {
  TRAINPROF_SKIP_WITHOUT_SHARED_TRACES();
  auto m = trace::ReadTraceFile(
      std::string(TRAINPROF_SHARED_DIR) + "/data/traces/nccl_parser_config/nccl_data.json.gz", {});
  ASSERT_TRUE(m.ok()) << m.status().message();
  int kernels = 0;
  for (size_t i = 0; i < m->size(); ++i) {
    if (m->kind[i] != trace::EventKind::kKernel || m->name_of(i).find("ncclKernel_AllReduce") != 0)
      continue;
    const trace::CollectiveArgs* a = m->CollectiveOf(i);
    ASSERT_NE(a, nullptr) << m->name_of(i);
    EXPECT_EQ(m->names[a->collective], "allreduce");
    EXPECT_EQ(m->names[a->dtype], "Float");
    EXPECT_EQ(m->names[a->process_group], "0");
    EXPECT_EQ(a->group_size, 2);
    EXPECT_GT(a->in_nelems, 0);
    EXPECT_EQ(a->in_nelems, a->out_nelems);
    ++kernels;
  }
  EXPECT_GT(kernels, 0);
}

}  // namespace
}  // namespace trainprof
