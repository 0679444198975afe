// The analyses of `trainprof analyze` on generated Kineto traces whose answers are known exactly
// (tests/util/trace_gen.h): each scenario is written to a temp folder (plain or gzipped), read
// with trace::ReadTraceFile, analysed with analysis::AnalyzeAll, and every figure is compared
// with what the trace was built to give. They need nothing beside the checkout.
//
// Tolerances: figures in nanoseconds and counts are exact. Percentages and means are ratios of
// the same integers on both sides, computed in another order, so they get 1e-9. "blocks per SM"
// and "est. achieved occupancy %" are stored as float in the TraceModel, so those get 1e-4.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis/analyze.h"
#include "report/json.h"
#include "trace/kineto/kineto_reader.h"
#include "util/generated_ranks.h"
#include "util/golden.h"
#include "util/trace_gen.h"

namespace trainprof {
namespace {

using testutil::ExpectedStep;
using testutil::GenCpuOp;
using testutil::GenGpuKind;
using testutil::GenGpuOp;
using testutil::GenRank;
using testutil::GenStep;
using testutil::GenTrace;

static_assert(static_cast<int>(testutil::kGenNumCategories) ==
              static_cast<int>(analysis::kNumCategories));
static_assert(testutil::kGenKernelWaitNs == analysis::HtaOptions{}.consecutive_kernel_delay_ns);
static_assert(testutil::kGenRuntimeCutoffNs == analysis::HtaOptions{}.runtime_cutoff_ns);
static_assert(testutil::kGenLaunchDelayCutoffNs == analysis::HtaOptions{}.launch_delay_cutoff_ns);

constexpr int64_t kUs = 1000;
// Kernel names as today's CUDA libraries write them; the gemm runs on Tensor Cores ("xmma").
const char* kGemm =
    "sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x32_stage4_warpsize2x2x1_"
    "tensor16x8x16_kernel";
const char* kAdd =
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
    "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, "
    "at::detail::Array<char*, 3>)";
const char* kAllReduce = "ncclKernel_AllReduce_RING_LL_Sum_float";

GenGpuOp Kernel(const char* name, int64_t start, int64_t dur, int64_t delay, int64_t stream = 7) {
  return {
      .name = name, .stream = stream, .start_ns = start, .dur_ns = dur, .launch_delay_ns = delay};
}

using Analysed = testutil::AnalysedRanks;

enum class Format { kJson, kGzip };

Analysed GenerateAndAnalyze(const GenTrace& spec, const std::vector<GenRank>& ranks,
                            Format format) {
  std::vector<std::pair<GenTrace, GenRank>> all;
  for (const GenRank& r : ranks) all.emplace_back(spec, r);
  return testutil::AnalyseGeneratedRanks(all, format == Format::kGzip);
}

void ExpectNear(double actual, double expected, double rel, const char* what) {
  EXPECT_NEAR(actual, expected, std::max(1e-12, std::abs(expected) * rel)) << what;
}

void ExpectSteps(const analysis::RankAnalysis& a, const testutil::Expected& x) {
  ASSERT_EQ(a.steps.steps.size(), x.steps.size());
  EXPECT_EQ(a.steps.dropped, x.dropped);
  ASSERT_EQ(a.overview.steps.size(), x.steps.size());
  for (size_t i = 0; i < x.steps.size(); ++i) {
    const analysis::Step& s = a.steps.steps[i];
    const ExpectedStep& e = x.steps[i];
    SCOPED_TRACE(e.name);
    EXPECT_EQ(s.name, e.name);
    EXPECT_EQ(s.begin_ns, e.begin_ns);
    EXPECT_EQ(s.end_ns, e.end_ns);
    EXPECT_EQ(s.launches, e.launches);
    const analysis::StepBreakdown& b = a.overview.steps[i];
    EXPECT_EQ(b.total_ns, e.dur_ns);
    for (int c = 0; c < analysis::kNumCategories; ++c)
      EXPECT_EQ(b.ns[c], e.overview_ns[c]) << analysis::CategoryTitle(c);
  }
}

void ExpectGpuSummary(const analysis::RankAnalysis& a, const testutil::Expected& x) {
  ASSERT_EQ(a.tables->gpus.size(), 1u);
  const analysis::GpuSummary& g = a.tables->gpus[0];
  EXPECT_EQ(g.device, 0);
  EXPECT_EQ(g.name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(g.arch, "sm_80");
  EXPECT_EQ(g.num_sms, 108);
  EXPECT_EQ(g.kernels, x.kernels);
  EXPECT_EQ(g.kernel_ns, x.kernel_ns);
  ExpectNear(g.utilization_pct, x.utilization_pct, 1e-9, "GPU utilization");
  ASSERT_EQ(g.sm_efficiency_pct.has_value(), x.sm_efficiency_pct.has_value());
  if (x.sm_efficiency_pct) ExpectNear(*g.sm_efficiency_pct, *x.sm_efficiency_pct, 1e-4, "SM eff.");
  ASSERT_EQ(g.occupancy_pct.has_value(), x.occupancy_pct.has_value());
  if (x.occupancy_pct) ExpectNear(*g.occupancy_pct, *x.occupancy_pct, 1e-4, "occupancy");
}

void ExpectHta(const analysis::HtaResult& h, const testutil::Expected& x) {
  EXPECT_EQ(h.rank, x.rank);
  EXPECT_EQ(h.gpu_events, x.gpu_events);
  EXPECT_EQ(h.temporal.span_ns, x.hta_span_ns);
  EXPECT_EQ(h.temporal.idle_ns, x.hta_idle_ns);
  EXPECT_EQ(h.temporal.compute_ns, x.hta_compute_ns);
  EXPECT_EQ(h.temporal.non_compute_ns, x.hta_non_compute_ns);
  std::vector<analysis::StreamIdle> idle = h.idle;
  std::sort(idle.begin(), idle.end(),
            [](const auto& a, const auto& b) { return a.stream < b.stream; });
  ASSERT_EQ(idle.size(), x.idle.size());
  for (size_t i = 0; i < idle.size(); ++i) {
    SCOPED_TRACE("stream " + std::to_string(x.idle[i].stream));
    EXPECT_EQ(idle[i].stream, x.idle[i].stream);
    for (int c = 0; c < analysis::kNumIdle; ++c) {
      EXPECT_EQ(idle[i].ns[c], x.idle[i].ns[c]) << analysis::IdleCategoryName(c);
      EXPECT_EQ(idle[i].gaps[c], x.idle[i].gaps[c]) << analysis::IdleCategoryName(c);
    }
  }
  std::map<std::string, int64_t> types(h.kernel_types.begin(), h.kernel_types.end());
  EXPECT_EQ(types, x.kernel_types);
  EXPECT_EQ(h.has_communication, x.communication_ns > 0);
  ExpectNear(h.comm_comp_overlap_pct, x.comm_overlap_pct, 1e-9, "comm-comp overlap");
  const analysis::LaunchStats& l = h.launch;
  EXPECT_EQ(l.launches, x.launches);
  EXPECT_EQ(l.short_kernels, x.short_kernels);
  EXPECT_EQ(l.runtime_outliers, x.runtime_outliers);
  EXPECT_EQ(l.launch_delay_outliers, x.launch_delay_outliers);
  ExpectNear(l.mean_delay_ns, x.mean_delay_ns, 1e-9, "mean delay");
  ExpectNear(l.median_delay_ns, x.median_delay_ns, 1e-9, "median delay");
  ExpectNear(l.p95_delay_ns, x.p95_delay_ns, 1e-9, "p95 delay");
  ExpectNear(l.max_delay_ns, x.max_delay_ns, 1e-9, "max delay");
  ExpectNear(l.mean_launch_ns, x.mean_launch_ns, 1e-9, "mean launch");
}

// Every analysis of every rank against the generator's answers.
void ExpectAllMatch(const Analysed& r) {
  ASSERT_EQ(r.an.size(), r.expected.size());
  for (size_t i = 0; i < r.an.size(); ++i) {
    SCOPED_TRACE("rank " + std::to_string(r.expected[i].rank));
    const trace::TraceModel& m = r.models[i];
    EXPECT_EQ(m.rank, r.expected[i].rank);
    EXPECT_EQ(m.rank_source, "distributedInfo");
    for (const base::Diagnostic& d : m.diagnostics)
      ADD_FAILURE() << "diagnostic " << d.name() << ": " << d.message;
    ExpectSteps(r.an[i], r.expected[i]);
    ExpectGpuSummary(r.an[i], r.expected[i]);
    ExpectHta(r.an[i].tables->hta, r.expected[i]);
    int64_t peak = -1;
    for (const auto& [dev, bytes] : m.peak_allocated_bytes)
      if (dev == 0) peak = bytes;
    EXPECT_EQ(peak, r.expected[i].peak_allocated_bytes);
  }
}

std::vector<std::string> Findings(const report::Report& r) {
  std::vector<std::string> out;
  if (const report::Section* s = r.FindSection("recommendations"))
    for (const report::Finding& f : s->findings) out.push_back(f.text);
  return out;
}

// How many findings contain `text`.
int CountFindings(const report::Report& r, std::string_view text) {
  std::vector<std::string> f = Findings(r);
  return static_cast<int>(std::count_if(
      f.begin(), f.end(), [&](const std::string& s) { return s.find(text) != std::string::npos; }));
}

std::string AllFindings(const report::Report& r) {
  std::string out;
  for (const std::string& f : Findings(r)) out += "\n  " + f;
  return out;
}

double MetricValue(const report::Report& r, const std::string& section, std::string_view key) {
  const report::Section* s = r.FindSection(section);
  const report::Metric* m = s ? s->FindMetric(key) : nullptr;
  return m ? report::AsNumber(m->value) : std::nan("");
}

// --- scenarios --------------------------------------------------------------------------------

// Compute bound, a large model: one 2,000 µs step = 20 µs data loader, then eight 237.5 µs gemm
// kernels back to back from 50 µs (each launched 20 µs ahead of its start, inside aten::linear
// [25, 1990) µs) and a 60 µs copy to the host on stream 8 from 1,900 µs, under the last kernel
// for 50 µs. Memory peaks at 95 % of the GPU's 80 GiB.
GenTrace ComputeBound() {
  GenStep s{.host_dur_ns = 2000 * kUs, .data_loader_ns = 20 * kUs};
  s.cpu_ops.push_back({.name = "aten::linear", .start_ns = 25 * kUs, .dur_ns = 1965 * kUs});
  for (int64_t k = 0; k < 8; ++k) {
    GenGpuOp g = Kernel(kGemm, 50 * kUs + k * 237'500, 237'500, 20 * kUs);
    g.blocks_per_sm = 2;
    g.occupancy_pct = 50;
    s.gpu_ops.push_back(g);
  }
  s.gpu_ops.push_back({.kind = GenGpuKind::kMemcpy,
                       .name = "Memcpy DtoH (Device -> Pinned)",
                       .stream = 8,
                       .start_ns = 1900 * kUs,
                       .dur_ns = 60 * kUs,
                       .launch_delay_ns = 20 * kUs});
  GenTrace t;
  t.steps = {s, s, s};
  int64_t total = t.total_memory_bytes;
  t.memory = {{10 * kUs, total / 2}, {1000 * kUs, total / 100 * 95}, {1990 * kUs, total / 2}};
  return t;
}

TEST(GeneratedTrace, ComputeBound) {
  Analysed r = GenerateAndAnalyze(ComputeBound(), {{.rank = 0}}, Format::kJson);
  ASSERT_EQ(r.expected.size(), 1u);
  const testutil::Expected& x = r.expected[0];
  // The generator's answers, by hand: 2,000 µs steps; per step Kernel 1,900, Memcpy [1950, 1960)
  // = 10, the first launch [30, 35) before any kernel runs 5 µs of Runtime, DataLoader 20, CPU
  // Exec [25, 50) less the launch plus [1960, 1990) = 50, Other [20, 25) and [1990, 2000) = 15.
  ASSERT_EQ(x.steps.size(), 3u);
  EXPECT_EQ(x.steps[1].dur_ns, 2000 * kUs);
  EXPECT_EQ(x.steps[1].gpu_busy_ns, 1910 * kUs);
  EXPECT_EQ(x.steps[1].gpu_idle_ns, 90 * kUs);
  const std::array<int64_t, 8> by_hand = {1900 * kUs, 10 * kUs, 0,        0,
                                          5 * kUs,    20 * kUs, 50 * kUs, 15 * kUs};
  EXPECT_EQ(x.steps[1].overview_ns, by_hand);
  EXPECT_DOUBLE_EQ(x.utilization_pct, 95.0);  // kernels only; the copy is not utilization
  EXPECT_EQ(x.hta_idle_ns, 180 * kUs);        // [1960, 2050) µs between steps, twice
  EXPECT_EQ(x.kernel_types.at("COMPUTATION overlapping MEMORY"), 3 * 50 * kUs);
  EXPECT_EQ(x.steps[0].launch_delays_ns, std::vector<int64_t>(9, 15 * kUs));
  ExpectAllMatch(r);
  EXPECT_DOUBLE_EQ(r.an[0].tables->gpus[0].tensor_core_pct, 100.0);

  // Only the memory finding: no data loader, communication, idle or Tensor Core advice.
  EXPECT_EQ(Findings(r.report).size(), 1u) << AllFindings(r.report);
  EXPECT_EQ(CountFindings(r.report, "GPU 0 memory peaked at 95.0% of its 80.0 GiB"), 1)
      << AllFindings(r.report);
  EXPECT_DOUBLE_EQ(MetricValue(r.report, "gpu", "avg_utilization_pct"), 95.0);
  EXPECT_EQ(MetricValue(r.report, "gpu", "peak_allocated_bytes"),
            static_cast<double>(x.peak_allocated_bytes));
  EXPECT_DOUBLE_EQ(MetricValue(r.report, "overview", "avg_step_time_s"), 0.002);
}

// Data-loader bound: of each 1,000 µs step the data loader takes the first 300 µs (30 %); then a
// 20 µs host-to-device copy and four 150.25 µs convolution kernels.
GenTrace DataLoaderBound() {
  GenStep s{.host_dur_ns = 1000 * kUs, .data_loader_ns = 300 * kUs};
  s.cpu_ops.push_back({.name = "aten::to", .start_ns = 300 * kUs, .dur_ns = 8 * kUs});
  s.cpu_ops.push_back({.name = "aten::conv2d", .start_ns = 308 * kUs, .dur_ns = 672 * kUs});
  s.gpu_ops.push_back({.kind = GenGpuKind::kMemcpy,
                       .name = "Memcpy HtoD (Pinned -> Device)",
                       .start_ns = 305 * kUs,
                       .dur_ns = 20 * kUs,
                       .launch_delay_ns = 4 * kUs,
                       .launch_dur_ns = 3 * kUs});
  for (int64_t k = 0; k < 4; ++k)
    s.gpu_ops.push_back(Kernel(
        "sm80_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x32",
        330 * kUs + k * 160 * kUs, 150'250, 20 * kUs));
  GenTrace t;
  t.steps = {s, s, s, s};
  return t;
}

// An inference step (no backward, no optimizer): 700 us of host preprocessing with the GPU idle,
// then one 200 us kernel. Utilization is low, and the finding says where the GPU waited --
// before its kernels, outside the kernel span the idle-time breakdown covers -- with no batch
// size or data-loader advice.
TEST(GeneratedTrace, HostWorkBeforeTheKernelsIsNamed) {
  GenStep s{.host_dur_ns = 1000 * kUs};
  s.cpu_ops.push_back(
      {.name = "preprocess", .category = "user_annotation", .start_ns = 0, .dur_ns = 700 * kUs});
  s.cpu_ops.push_back({.name = "aten::mm", .start_ns = 750 * kUs, .dur_ns = 40 * kUs});
  s.gpu_ops.push_back(
      Kernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n", 790 * kUs, 200 * kUs, 30 * kUs));
  GenTrace t;
  t.steps = {s, s, s};
  Analysed r = GenerateAndAnalyze(t, {{.rank = 0}}, Format::kJson);
  EXPECT_EQ(CountFindings(r.report, "the CPU works alone"), 1) << AllFindings(r.report);
  EXPECT_EQ(CountFindings(r.report, "Raise the batch size"), 0) << AllFindings(r.report);
  EXPECT_EQ(CountFindings(r.report, "No data-loader range"), 0) << AllFindings(r.report);
}

TEST(GeneratedTrace, DataLoaderBound) {
  Analysed r = GenerateAndAnalyze(DataLoaderBound(), {{.rank = 0}}, Format::kGzip);
  ASSERT_EQ(r.expected.size(), 1u);
  const testutil::Expected& x = r.expected[0];
  ASSERT_EQ(x.steps.size(), 4u);
  for (const ExpectedStep& s : x.steps) {
    EXPECT_EQ(s.dur_ns, 1000 * kUs);
    EXPECT_EQ(s.overview_ns[testutil::kGenDataLoader], 300 * kUs);
    EXPECT_EQ(s.overview_ns[testutil::kGenMemcpy], 20 * kUs);
    EXPECT_EQ(s.gpu_busy_ns, 20 * kUs + 4 * 150'250);
  }
  EXPECT_DOUBLE_EQ(x.utilization_pct, 60.1);
  ExpectAllMatch(r);
  ASSERT_EQ(r.an.size(), 1u);
  EXPECT_DOUBLE_EQ(r.an[0].overview.avg_ns[analysis::kDataLoader] / r.an[0].overview.avg_total_ns,
                   0.3);
  // The root cause that costs the most step time leads the list.
  ASSERT_FALSE(Findings(r.report).empty());
  EXPECT_EQ(Findings(r.report).front().rfind("30.0% of the step time is in the DataLoader", 0), 0u)
      << AllFindings(r.report);
  EXPECT_EQ(CountFindings(r.report,
                          "30.0% of the step time is in the DataLoader (threshold 5%) (0.300 ms of "
                          "1.000 ms; every step waits: 0.3 ms at the median, 0.3 ms on average)"),
            1)
      << AllFindings(r.report);
  EXPECT_EQ(CountFindings(r.report, "communication"), 0) << AllFindings(r.report);
  const report::Table* avg = r.report.FindSection("overview")->FindTable("step_breakdown_average");
  ASSERT_NE(avg, nullptr);
  ASSERT_EQ(avg->rows.size(), 1u);
  EXPECT_NEAR(report::AsNumber(avg->rows[0][avg->ColumnIndex("dataloader_pct")]), 30.0, 1e-9);
}

// DDP-like steps of 1,000 µs on the host: five 100.5 µs gemm kernels on stream 7 [40, 542.5) µs,
// and an all-reduce (nccl:all_reduce and record_param_comms on the host, launched 20 µs before)
// whose 300 µs NCCL kernel runs on stream 20 either after the compute (`overlapped` false: from
// 720 µs, so it ends 20 µs past the host range and the step is extended to its end, before the
// next step's first kernel at 1,040 µs) or beside it (from 317.5 µs: 225 µs under compute).
GenTrace Ddp(bool overlapped) {
  GenStep s{.host_dur_ns = 1000 * kUs};
  s.cpu_ops.push_back({.name = "aten::mm", .start_ns = 10 * kUs, .dur_ns = 600 * kUs});
  for (int64_t k = 0; k < 5; ++k)
    s.gpu_ops.push_back(Kernel(kGemm, 40 * kUs + k * 100'500, 100'500, 20 * kUs));
  int64_t comm_start = overlapped ? 317'500 : 720 * kUs;
  s.cpu_ops.push_back({.name = "nccl:all_reduce",
                       .category = "user_annotation",
                       .start_ns = comm_start - 20 * kUs,
                       .dur_ns = 15 * kUs});
  s.cpu_ops.push_back(
      {.name = "record_param_comms", .start_ns = comm_start - 19 * kUs, .dur_ns = 12 * kUs});
  s.gpu_ops.push_back(Kernel(kAllReduce, comm_start, 300 * kUs, 15 * kUs, 20));
  GenTrace t;
  t.world_size = 2;
  t.steps = {s, s, s};
  return t;
}

TEST(GeneratedTrace, CommunicationNotOverlapped) {
  Analysed r = GenerateAndAnalyze(Ddp(false), {{.rank = 1}}, Format::kJson);
  ASSERT_EQ(r.expected.size(), 1u);
  const testutil::Expected& x = r.expected[0];
  // Step 1 runs to its NCCL kernel's end, 1,020 µs; the next steps start there and end 1,000 µs
  // later. Communication per step: the collective op [700, 715) and the kernel [720, 1020).
  ASSERT_EQ(x.steps.size(), 3u);
  EXPECT_EQ(x.steps[0].dur_ns, 1020 * kUs);
  EXPECT_EQ(x.steps[1].dur_ns, 1000 * kUs);
  EXPECT_EQ(x.steps[1].begin_ns, x.steps[0].end_ns);
  for (const ExpectedStep& s : x.steps)
    EXPECT_EQ(s.overview_ns[testutil::kGenCommunication], 315 * kUs);
  EXPECT_EQ(x.comm_overlap_pct, 0.0);
  EXPECT_EQ(x.kernel_types.at("COMMUNICATION"), 3 * 300 * kUs);
  ExpectAllMatch(r);
  EXPECT_EQ(r.models[0].world_size, 2);
  EXPECT_EQ(r.models[0].backend, "nccl");
  EXPECT_TRUE(r.an[0].overview.any_communication);
  EXPECT_EQ(CountFindings(r.report, "is communication not hidden behind computation"), 1)
      << AllFindings(r.report);
  const report::Table* ct = r.report.FindSection("hta")->FindTable("comm_comp_overlap");
  ASSERT_NE(ct, nullptr);
  ASSERT_EQ(ct->rows.size(), 1u);
  EXPECT_EQ(report::AsNumber(ct->rows[0][1]), 0.0);
}

TEST(GeneratedTrace, CommunicationOverlapped) {
  Analysed r = GenerateAndAnalyze(Ddp(true), {{.rank = 0}}, Format::kJson);
  ASSERT_EQ(r.expected.size(), 1u);
  const testutil::Expected& x = r.expected[0];
  // Compute runs [40, 542.5) µs, the all-reduce [317.5, 617.5): 225 of its 300 µs overlapped;
  // only [542.5, 617.5) is Communication in the Overview (the collective op runs under kernels).
  EXPECT_DOUBLE_EQ(x.comm_overlap_pct, 75.0);
  EXPECT_EQ(x.kernel_types.at("COMPUTATION overlapping COMMUNICATION"), 3 * 225 * kUs);
  for (const ExpectedStep& s : x.steps) {
    EXPECT_EQ(s.dur_ns, 1000 * kUs);
    EXPECT_EQ(s.overview_ns[testutil::kGenCommunication], 75 * kUs);
    EXPECT_EQ(s.comm_overlap_ns, 225 * kUs);
  }
  ExpectAllMatch(r);
  EXPECT_EQ(CountFindings(r.report, "communication"), 0) << AllFindings(r.report);
  const report::Table* ct = r.report.FindSection("hta")->FindTable("comm_comp_overlap");
  ASSERT_NE(ct, nullptr);
  ASSERT_EQ(ct->rows.size(), 1u);
  EXPECT_DOUBLE_EQ(report::AsNumber(ct->rows[0][1]), 75.0);
}

// Launch bound: in each 500 µs step a copy, a memset and ten 4.5 µs add kernels, each launched
// by a 10 µs call that ends 3.5 µs before the kernel starts, so the GPU waits for the host
// between them (host wait); then three kernels launched together: the second starts 15 µs after
// the first ends (kernel wait), the third 70 µs after the second (other) and 103 µs after its
// launch call (a launch-delay outlier); a cudaStreamSynchronize waits for it. 50 µs of host time
// lie between the steps.
GenTrace LaunchBound() {
  GenStep s{.host_dur_ns = 500 * kUs, .gap_before_ns = 50 * kUs};
  s.cpu_ops.push_back({.name = "aten::copy_", .start_ns = 3 * kUs, .dur_ns = 12 * kUs});
  s.gpu_ops.push_back({.kind = GenGpuKind::kMemcpy,
                       .name = "Memcpy HtoD (Pageable -> Device)",
                       .start_ns = 15 * kUs,
                       .dur_ns = 12'500,
                       .launch_delay_ns = 10 * kUs,
                       .launch_dur_ns = 8 * kUs});
  s.cpu_ops.push_back({.name = "aten::zero_", .start_ns = 28 * kUs, .dur_ns = 10 * kUs});
  s.gpu_ops.push_back({.kind = GenGpuKind::kMemset,
                       .name = "Memset (Device)",
                       .start_ns = 40'500,
                       .dur_ns = 2'500,
                       .launch_delay_ns = 10'500,
                       .launch_dur_ns = 6 * kUs});
  for (int64_t k = 0; k < 10; ++k) {
    s.cpu_ops.push_back({.name = "aten::add", .start_ns = (58 + 25 * k) * kUs, .dur_ns = 14 * kUs});
    GenGpuOp g = Kernel(kAdd, 73'500 + k * 25 * kUs, 4'500, 13'500);
    g.launch_dur_ns = 10 * kUs;
    s.gpu_ops.push_back(g);
  }
  s.cpu_ops.push_back({.name = "aten::cat", .start_ns = 298 * kUs, .dur_ns = 21 * kUs});
  s.gpu_ops.push_back(
      Kernel("void at::native::CatArrayBatchedCopy<float>", 320 * kUs, 10 * kUs, 20 * kUs));
  s.gpu_ops.push_back(Kernel(kAdd, 345 * kUs, 5 * kUs, 39 * kUs));
  s.gpu_ops.push_back(Kernel(kAdd, 420 * kUs, 4'500, 108 * kUs));
  s.cpu_ops.push_back({.name = "cudaStreamSynchronize",
                       .category = "cuda_runtime",
                       .start_ns = 320 * kUs,
                       .dur_ns = 106 * kUs});
  GenTrace t;
  t.steps = {s, s, s};
  t.flows = false;  // the ac2g flows are optional: launches link by correlation id
  return t;
}

TEST(GeneratedTrace, IdleGpuWithLaunchDelays) {
  Analysed r = GenerateAndAnalyze(LaunchBound(), {{.rank = 0}}, Format::kGzip);
  ASSERT_EQ(r.expected.size(), 1u);
  const testutil::Expected& x = r.expected[0];
  // By hand, per step: busy 12.5 + 2.5 + 10 × 4.5 + 10 + 5 + 4.5 = 79.5 µs of 500, kernels 64.5;
  // utilization counts the gaps between steps: 3 × 64.5 of 1,600 µs. Idle on stream 7: host wait
  // 13 (memset) + 30.5 + 9 × 20.5 inside the step and 140.5 between steps; kernel wait 17 (the
  // cat kernel, launched before the last add ended) + 15; other 70.
  ASSERT_EQ(x.steps.size(), 3u);
  EXPECT_EQ(x.steps[0].gpu_busy_ns, 79'500);
  EXPECT_EQ(x.steps[0].gpu_idle_ns, 500 * kUs - 79'500);
  EXPECT_EQ(x.steps[0].overview_ns[testutil::kGenMemcpy], 12'500);
  EXPECT_EQ(x.steps[0].overview_ns[testutil::kGenMemset], 2'500);
  EXPECT_DOUBLE_EQ(x.utilization_pct, 100.0 * 3 * 64.5 / 1600);
  ASSERT_EQ(x.idle.size(), 1u);
  const std::array<int64_t, 3> idle = {3 * 228 * kUs + 2 * 140'500, 3 * 32 * kUs, 3 * 70 * kUs};
  EXPECT_EQ(x.idle[0].ns, idle);
  EXPECT_EQ(x.launches, 45);
  EXPECT_EQ(x.short_kernels, 36);  // the memset, the ten adds and the last add, per step
  EXPECT_EQ(x.launch_delay_outliers, 3);
  ExpectAllMatch(r);
  // Each step's GPU categories are its GPU busy time (no CPU collective here).
  for (size_t i = 0; i < x.steps.size(); ++i) {
    const analysis::StepBreakdown& b = r.an[0].overview.steps[i];
    EXPECT_EQ(b.ns[analysis::kKernel] + b.ns[analysis::kMemcpy] + b.ns[analysis::kMemset] +
                  b.ns[analysis::kCommunication],
              x.steps[i].gpu_busy_ns);
  }
  EXPECT_EQ(CountFindings(r.report, "GPU 0 is busy only 12.1% of the step time"), 1)
      << AllFindings(r.report);
  // What the host was doing in each step's 420.5 µs of GPU idle time (idle_causes.h), by hand
  // from LaunchBound(): the synchronize holds 15 + 70 + 1.5; the launch calls 8 + 6 + 10 + 9 × 10
  // + 12; the operators around them 4 + 4 + 4 + 9 × 4 + 0.5 (aten::cat starts before the last
  // add's kernel) + 4; nothing 3 + 3 + 16.5 + 9 × 6.5 - 0.5 + 1 + 74 (the step's tail after the
  // synchronize).
  const analysis::IdleCauses& idle_causes = r.an[0].tables->idle;
  EXPECT_EQ(idle_causes.idle_ns, 3 * 420'500);
  const std::array<int64_t, analysis::kIdleCauses> by_cause = {0, 3 * 86'500, 3 * 126'000,
                                                               3 * 52'500, 3 * 155'500};
  EXPECT_EQ(idle_causes.ns, by_cause);
  EXPECT_EQ(CountFindings(r.report,
                          "is host wait; 0.5 of 1.3 ms of GPU idle time lie between operators). "
                          "The host is between operators while the GPU waits"),
            1)
      << AllFindings(r.report);
  EXPECT_EQ(CountFindings(r.report,
                          "80.0% of kernels run shorter than the call that launched them "
                          "(threshold 30%) (36 of 45)"),
            1)
      << AllFindings(r.report);
  // The cause (host wait) comes before its symptom (low utilization), which points back at it.
  std::vector<std::string> f = Findings(r.report);
  ASSERT_GE(f.size(), 2u);
  EXPECT_EQ(f[0].rfind("The GPU is idle", 0), 0u) << AllFindings(r.report);
  EXPECT_NE(f[1].find("It follows from the causes listed above it"), std::string::npos)
      << AllFindings(r.report);
  EXPECT_EQ(CountFindings(r.report, "wait more than 100 µs"), 0) << AllFindings(r.report);
}

// A trailing step whose GPU work the profiler did not capture: 1 launch against 8 is dropped.
TEST(GeneratedTrace, IncompleteLastStepIsDropped) {
  GenTrace t = ComputeBound();
  t.memory.clear();
  t.steps.back().gpu_ops.resize(1);
  Analysed r = GenerateAndAnalyze(t, {{.rank = 0}}, Format::kJson);
  ASSERT_EQ(r.expected.size(), 1u);
  EXPECT_EQ(r.expected[0].dropped, std::vector<std::string>{"ProfilerStep#3"});
  EXPECT_EQ(r.expected[0].steps.size(), 2u);
  ExpectAllMatch(r);
}

// Four ranks of the compute-bound job, each with its own clock offset; rank 2 is 20 % slower.
// world_size 0: the traces carry no distributedInfo.
Analysed FourRanksRankTwoSlower(int64_t world_size) {
  GenTrace t = ComputeBound();
  t.memory.clear();
  t.world_size = world_size;
  std::vector<GenRank> ranks;
  for (int64_t r = 0; r < 4; ++r)
    ranks.push_back({.rank = r,
                     .skew_ns = r * 1'234'567 - 2'000'000,
                     .slowdown_num = r == 2 ? 6 : 1,
                     .slowdown_den = r == 2 ? 5 : 1});
  return GenerateAndAnalyze(t, ranks, Format::kGzip);
}

// The same four traces without distributedInfo (three models' traces in one folder look like
// this): 20 % slower is not a straggler, as nothing says they are ranks of one job.
TEST(GeneratedTrace, TracesOfNoOneJobNameNoStraggler) {
  Analysed r = FourRanksRankTwoSlower(/*world_size=*/0);
  ASSERT_EQ(r.models.size(), 4u);
  EXPECT_EQ(r.models[2].world_size, 0);
  for (const std::string& x : Findings(r.report))
    EXPECT_EQ(x.find("straggler"), std::string::npos) << x;
  const report::Section* rec = r.report.FindSection("recommendations");
  ASSERT_NE(rec, nullptr);
  ASSERT_FALSE(rec->notes.empty());
  EXPECT_NE(rec->notes.back().find("compared side by side, not as ranks of one job"),
            std::string::npos);
}

// Four ranks of the compute-bound job, each with its own clock offset; rank 2 is 20 % slower.
TEST(GeneratedTrace, FourRanksOneTwentyPercentSlower) {
  Analysed r = FourRanksRankTwoSlower(/*world_size=*/4);
  ASSERT_EQ(r.expected.size(), 4u);
  ExpectAllMatch(r);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(r.models[i].world_size, 4);
    const analysis::Overview& ov = r.an[i].overview;
    const analysis::Overview& ov0 = r.an[0].overview;
    ASSERT_EQ(ov.steps.size(), 3u);
    for (size_t s = 0; s < ov.steps.size(); ++s) {
      // The clock offset moves nothing; the slowdown scales every category exactly.
      int64_t num = i == 2 ? 6 : 1, den = i == 2 ? 5 : 1;
      EXPECT_EQ(ov.steps[s].total_ns * den, ov0.steps[s].total_ns * num) << i;
      for (int c = 0; c < analysis::kNumCategories; ++c)
        EXPECT_EQ(ov.steps[s].ns[c] * den, ov0.steps[s].ns[c] * num) << i << " " << c;
    }
    EXPECT_NEAR(r.an[i].tables->gpus[0].utilization_pct, 95.0, 1e-9);
  }
  EXPECT_EQ(r.an[2].overview.steps[0].total_ns, 2400 * kUs);
  const report::Table* avg = r.report.FindSection("overview")->FindTable("step_breakdown_average");
  ASSERT_NE(avg, nullptr);
  ASSERT_EQ(avg->rows.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(std::get<std::string>(avg->rows[i][0]), std::to_string(i));
    EXPECT_NEAR(report::AsNumber(avg->rows[i][avg->ColumnIndex("step_time_s")]),
                i == 2 ? 0.0024 : 0.002, 1e-12);
  }
  // (3 ranks × 3 steps × 2,000 µs + 3 × 2,400 µs) / 12 steps.
  EXPECT_NEAR(MetricValue(r.report, "overview", "avg_step_time_s"), 0.0021, 1e-12);
  // One straggler finding (2.4 ms against the median 2.0 ms: 20 % longer), leading the list,
  // and the same finding on every rank merged into one line.
  std::vector<std::string> f = Findings(r.report);
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].rfind("Rank 2: rank 2 is the straggler: its steps take 20.0% longer than the "
                       "median rank's (threshold 10%) (2.400 ms per step against 2.000 ms)",
                       0),
            0u)
      << AllFindings(r.report);
  for (const std::string& x : f)
    EXPECT_EQ(x.find("Rank 0:"), std::string::npos) << "per-rank findings are merged: " << x;
}

// Memory and FLOPs (profile_memory and record_shapes): each 1,000 µs step runs aten::linear
// [100, 700) µs > aten::addmm [150, 650) µs, bf16, [64, 1024] x [1024, 4096], launching one
// 200 µs gemm on Tensor Cores. Memory, from the first step's start: +1 MiB in linear (120 µs),
// +8 MiB in addmm (200 µs, the peak), linear frees its 1 MiB at 660 µs, the 8 MiB are freed
// outside every op (800 µs), and the second step's linear takes 2 MiB (1,120 µs).
GenTrace MemoryAndFlops() {
  GenStep s{.host_dur_ns = 1000 * kUs};
  const std::string bf16 = R"("c10::BFloat16")";
  s.cpu_ops.push_back({.name = "aten::linear",
                       .start_ns = 100 * kUs,
                       .dur_ns = 600 * kUs,
                       .input_dims = "[[64, 1024], [4096, 1024], [4096]]",
                       .input_types = "[" + bf16 + ", " + bf16 + ", " + bf16 + "]",
                       .call_stack = "train.py(12): step;model.py(40): forward"});
  s.cpu_ops.push_back(
      {.name = "aten::addmm",
       .start_ns = 150 * kUs,
       .dur_ns = 500 * kUs,
       .input_dims = "[[4096], [64, 1024], [1024, 4096], [], []]",
       .input_types = "[" + bf16 + ", " + bf16 + ", " + bf16 + R"(, "Scalar", "Scalar"])"});
  s.gpu_ops.push_back(Kernel(kGemm, 300 * kUs, 200 * kUs, 20 * kUs));
  GenTrace t;
  t.steps = {s, s};
  constexpr int64_t kMiB = 1 << 20;
  t.memory = {{120 * kUs, 1 * kMiB, 0x1000},
              {200 * kUs, 9 * kMiB, 0x2000},
              {660 * kUs, 8 * kMiB, 0x1000},
              {800 * kUs, 0, 0x2000},
              {1120 * kUs, 2 * kMiB, 0x3000}};
  return t;
}

TEST(GeneratedTrace, MemoryView) {
  Analysed r = GenerateAndAnalyze(MemoryAndFlops(), {{.rank = 0}}, Format::kGzip);
  ASSERT_EQ(r.an.size(), 1u);
  ExpectAllMatch(r);
  const testutil::Expected& x = r.expected[0];
  constexpr int64_t kMiB = 1 << 20;
  // The generator's attribution, by hand: linear +1 -1 +2, addmm +8, one inside no op.
  EXPECT_EQ(x.memory_self_increase.at("aten::linear"), 2 * kMiB);
  EXPECT_EQ(x.memory_self_increase.at("aten::addmm"), 8 * kMiB);
  EXPECT_EQ(x.memory_unattributed, 1);
  const analysis::MemoryResult& mem = r.an[0].memory;
  const trace::TraceModel& m = r.models[0];
  EXPECT_EQ(mem.events, 5);
  EXPECT_EQ(mem.unattributed, x.memory_unattributed);
  std::map<std::string, int64_t> self;
  for (const analysis::OperatorMemory& o : mem.lists->operators)
    self[m.names[o.op]] = o.self_increase;
  EXPECT_EQ(self, x.memory_self_increase);
  ASSERT_EQ(mem.devices.size(), 1u);
  const analysis::DeviceMemory& d = mem.devices[0];
  EXPECT_EQ(d.peak_allocated, x.peak_allocated_bytes);
  EXPECT_EQ(d.peak_reserved, 9 * kMiB + (1 << 21));
  ASSERT_EQ(d.series->live_at_peak.size(), 2u);
  EXPECT_EQ(m.names[d.series->live_at_peak[0].op], "aten::addmm");
  EXPECT_EQ(d.series->live_at_peak[0].bytes, 8 * kMiB);
  EXPECT_EQ(d.live_unknown, 0);
  ASSERT_EQ(mem.lists->allocations.size(), 3u);
  EXPECT_EQ(mem.lists->allocations[0].free_ns - mem.lists->allocations[0].alloc_ns, 540 * kUs);
  EXPECT_EQ(mem.lists->allocations[1].free_ns - mem.lists->allocations[1].alloc_ns, 600 * kUs);
  EXPECT_EQ(mem.lists->allocations[2].free_ns, trace::kNone);
  const report::Section* s = r.report.FindSection("memory");
  ASSERT_NE(s, nullptr);
  EXPECT_NE(s->FindTable("memory_curve_r0_gpu0"), nullptr);
  EXPECT_EQ(s->FindTable("memory_allocations")->rows.size(), 3u);
}

// A lone rank with a core to spare runs its timeline views and its operator-tree views on two
// threads: the report must be the one thread's, byte for byte.
TEST(GeneratedTrace, LoneRankSplitOnTwoThreadsGivesTheSameReport) {
  Analysed r = GenerateAndAnalyze(MemoryAndFlops(), {{.rank = 0}}, Format::kJson);
  ASSERT_EQ(r.models.size(), 1u);
  std::string text[2];
  for (bool split : {false, true}) {
    analysis::AnalyzeOptions o;
    o.split_lone_rank = split;
    std::vector<analysis::RankAnalysis> an{analysis::AnalyzeRank(r.models[0], o, o.hta)};
    text[split] =
        report::RenderJsonString(analysis::BuildAnalyzeReport(r.models, an, o, "generated"));
  }
  EXPECT_GT(text[0].size(), 1000u);
  EXPECT_EQ(text[0], text[1]);
  EXPECT_TRUE(analysis::LoneRankHasSpareCore(1, 2));
  EXPECT_FALSE(analysis::LoneRankHasSpareCore(2, 2));
  EXPECT_FALSE(analysis::LoneRankHasSpareCore(1, 1));
}

TEST(GeneratedTrace, FlopsAndMfu) {
  Analysed r = GenerateAndAnalyze(MemoryAndFlops(), {{.rank = 0}}, Format::kJson);
  ASSERT_EQ(r.an.size(), 1u);
  const analysis::FlopsResult& f = r.an[0].tables->flops;
  EXPECT_TRUE(f.has_shapes);
  EXPECT_EQ(f.peak.gpu, "A100 SXM");
  EXPECT_EQ(f.main_precision, analysis::Precision::kFp16);
  // 2 * 64 * 1024 * 4096 FLOPs a call, two calls each over 200 µs of gemm.
  const double per_call = 2.0 * 64 * 1024 * 4096;
  ASSERT_EQ(r.an[0].lists->flops_operators.size(), 2u);
  for (const analysis::FlopsRow& o : r.an[0].lists->flops_operators) {
    SCOPED_TRACE(o.name);
    EXPECT_EQ(o.calls, 2);
    EXPECT_EQ(o.flops, 2 * per_call);
    EXPECT_EQ(o.device_ns, 2 * 200 * kUs);
    EXPECT_DOUBLE_EQ(o.tflops_per_s(), 2 * per_call / (400 * kUs) / 1e3);
  }
  const testutil::Expected& x = r.expected[0];
  ASSERT_EQ(f.steps.size(), x.steps.size());
  for (size_t i = 0; i < f.steps.size(); ++i) {
    EXPECT_EQ(f.steps[i].flops, per_call);  // addmm inside linear: counted once
    EXPECT_EQ(f.steps[i].dur_ns, x.steps[i].dur_ns);
  }
  // The Operator view by call stack: linear's two calls under their one stack.
  ASSERT_EQ(r.an[0].lists->operators_by_stack.size(), 1u);
  EXPECT_EQ(r.an[0].lists->operators_by_stack[0].call_stack,
            "train.py(12): step;model.py(40): forward");
  EXPECT_EQ(r.an[0].lists->operators_by_stack[0].calls, 2);
  EXPECT_EQ(r.an[0].lists->operators_by_stack[0].device_total_ns, 2 * 200 * kUs);
  const report::Section* ov = r.report.FindSection("operator_view");
  ASSERT_NE(ov, nullptr);
  EXPECT_NE(ov->FindTable("operator_view_by_stack"), nullptr);
  const report::Section* s = r.report.FindSection("mfu");
  ASSERT_NE(s, nullptr);
  const report::Table* t = s->FindTable("mfu_steps");
  ASSERT_NE(t, nullptr);
  const double tflops = per_call / x.steps[0].dur_ns / 1e3;
  EXPECT_DOUBLE_EQ(report::AsNumber(t->rows[0][t->ColumnIndex("mfu_pct")]), 100 * tflops / 312);
}

TEST(GeneratedTrace, NoShapesNoMemorySaysSo) {
  Analysed r = GenerateAndAnalyze(DataLoaderBound(), {{.rank = 0}}, Format::kJson);
  const report::Section* mfu = r.report.FindSection("mfu");
  ASSERT_NE(mfu, nullptr);
  ASSERT_FALSE(mfu->notes.empty());
  EXPECT_NE(mfu->notes[0].find("record_shapes"), std::string::npos);
  const report::Section* mem = r.report.FindSection("memory");
  ASSERT_NE(mem, nullptr);
  EXPECT_NE(mem->notes.at(0).find("profile_memory"), std::string::npos);
  // The copies' bandwidth: 1 MiB each (the generator's "bytes") over 20 µs.
  const report::Section* bw = r.report.FindSection("memcpy_bandwidth");
  ASSERT_NE(bw, nullptr);
  ASSERT_EQ(r.an[0].tables->memcpy.size(), 1u);
  EXPECT_EQ(r.an[0].tables->memcpy[0].direction, "HtoD");
  EXPECT_DOUBLE_EQ(r.an[0].tables->memcpy[0].bytes_per_s(), 1048576 / 20e-6);
}

// --- the generator itself ---------------------------------------------------------------------

TEST(TraceGen, WritesTodaysKinetoShapeDeterministically) {
  GenTrace t = Ddp(true);
  t.memory = {{5 * kUs, 1 << 30}};
  auto a = testutil::GenerateKinetoTrace(t, {.rank = 3});
  auto b = testutil::GenerateKinetoTrace(t, {.rank = 3});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->json, b->json);
  nlohmann::json j = nlohmann::json::parse(a->json);
  EXPECT_EQ(j["schemaVersion"], 1);
  EXPECT_EQ(j["distributedInfo"]["rank"], 3);
  EXPECT_EQ(j["distributedInfo"]["world_size"], 2);
  EXPECT_EQ(j["deviceProperties"][0]["numSms"], 108);
  std::map<std::string, int> by_cat;
  bool fractional = false;
  for (const auto& e : j["traceEvents"]) {
    by_cat[e.value("cat", e["ph"].get<std::string>())]++;
    if (e["ph"] == "X" && e["cat"] == "kernel") {
      for (const char* k : {"device", "stream", "correlation", "External id"})
        EXPECT_TRUE(e["args"].contains(k)) << k;
    }
    fractional |= e.contains("ts") && e["ts"].get<double>() != std::floor(e["ts"].get<double>());
  }
  EXPECT_EQ(by_cat["user_annotation"], 3 + 3);  // ProfilerStep#N and nccl:all_reduce
  EXPECT_EQ(by_cat["kernel"], 3 * 6);
  EXPECT_EQ(by_cat["cuda_runtime"], 3 * 6);
  EXPECT_EQ(by_cat["ac2g"], 2 * 3 * 6);
  EXPECT_EQ(by_cat["cpu_instant_event"], 1);
  EXPECT_TRUE(fractional);
}

TEST(TraceGen, RejectsALaunchOutsideItsStep) {
  GenTrace t;
  GenStep s{.host_dur_ns = 100 * kUs};
  s.gpu_ops.push_back(Kernel(kAdd, 10 * kUs, 5 * kUs, 20 * kUs));  // launched 10 µs before
  t.steps = {s};
  EXPECT_FALSE(testutil::GenerateKinetoTrace(t, {}).ok());
  EXPECT_FALSE(testutil::GenerateKinetoTrace(ComputeBound(), {.slowdown_den = 0}).ok());
}

}  // namespace
}  // namespace trainprof
