// FLOPs, TFLOP/s and MFU on hand-made operators and TraceModels, answers worked out by hand.
#include "analysis/flops.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "analysis/memcpy_bandwidth.h"
#include "analysis/op_tree.h"
#include "analysis/operator_view.h"
#include "analysis/steps.h"
#include "trace/trace_files.h"
#include "util/golden.h"

namespace trainprof::analysis {
namespace {

using trace::EventKind;

TEST(Flops, MatrixProducts) {
  // mm [64, 128] x [128, 32]: 2*64*128*32 FLOPs; fp32 bytes (64*128 + 128*32 + 64*32) * 4.
  OpFlops f = FlopsOf("aten::mm", "[[64, 128], [128, 32]]", "[\"float\", \"float\"]");
  EXPECT_EQ(f.flops, 524288);
  EXPECT_EQ(f.bytes, (8192 + 4096 + 2048) * 4);
  EXPECT_EQ(f.precision, Precision::kFp32);
  // addmm: the bias comes first; Scalars add no bytes.
  f = FlopsOf("aten::addmm", "[[512], [1024, 1705], [1705, 512], [], []]",
              "[\"c10::BFloat16\", \"c10::BFloat16\", \"c10::BFloat16\", \"Scalar\", \"Scalar\"]");
  EXPECT_EQ(f.flops, 2.0 * 1024 * 1705 * 512);
  EXPECT_EQ(f.bytes, (512 + 1024 * 1705 + 1705 * 512 + 1024 * 512) * 2.0);
  EXPECT_EQ(f.precision, Precision::kFp16);
  EXPECT_EQ(FlopsOf("aten::bmm", "[[8, 16, 32], [8, 32, 4]]", "").flops, 2.0 * 8 * 16 * 32 * 4);
  EXPECT_EQ(FlopsOf("aten::bmm", "[[8, 16, 32], [8, 32, 4]]", "").bytes, 0);  // no types
  // linear: x [4, 10, 256], weight [512, 256] -> 40 rows.
  EXPECT_EQ(FlopsOf("aten::linear", "[[4, 10, 256], [512, 256], [512]]", "").flops,
            2.0 * 40 * 256 * 512);
  // Dims that do not fit the operator: no FLOPs.
  EXPECT_EQ(FlopsOf("aten::mm", "[[64, 128], [127, 32]]", "").flops, 0);
  EXPECT_EQ(FlopsOf("aten::relu", "[[64, 128]]", "").flops, 0);
  EXPECT_EQ(FlopsOf("aten::cat", "[[[2, 3], [2, 3]], []]", "").flops, 0);
}

// A fused MoE from its inputs: 8 tokens, each to 2 of 4 experts of hidden 64, w1 gate and up
// (2 x 128) and w2 down (128): 2 x 16 routed tokens x 64 x (256 + 128).
TEST(Flops, FusedMixtureOfExpertsFromItsInputs) {
  const char* dims = "[[8, 64], [4, 256, 64], [4, 64, 128], [8, 2], [8, 2]]";
  const OpFlops f =
      FlopsOf("vllm::outplace_fused_experts", dims,
              R"(["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "float", "int"])");
  EXPECT_EQ(f.flops, 2.0 * 16 * 64 * (256 + 128));
  EXPECT_EQ(f.precision, Precision::kFp16);  // fp16/bf16
  // Without the experts' weights (vLLM's moe_forward: hidden and router logits) no FLOPs.
  EXPECT_EQ(FlopsOf("vllm::moe_forward", "[[8192, 3072], [8192, 32], [], []]", "").flops, 0);
  EXPECT_EQ(FlopsOf("triton_poi_fused_moe_forward_0", dims, "").flops, 0);  // not an operator
}

TEST(Flops, ConvolutionAndAttention) {
  // x [2, 3, 32, 32], w [16, 3, 3, 3]: out 2*16*32*32 (same size), each 3*3*3 MACs.
  EXPECT_EQ(
      FlopsOf("aten::convolution", "[[2, 3, 32, 32], [16, 3, 3, 3], [16], [], [], []]", "").flops,
      2.0 * (2 * 16 * 32 * 32) * 3 * 9);
  // q [2, 8, 128, 64], k and v [2, 8, 256, 64]: 2*2*8*128*256*(64+64).
  EXPECT_EQ(FlopsOf("aten::scaled_dot_product_attention",
                    "[[2, 8, 128, 64], [2, 8, 256, 64], [2, 8, 256, 64], []]", "")
                .flops,
            2.0 * 2 * 8 * 128 * 256 * 128);
}

// PyTorch 2.x's "Concrete Inputs" give the geometry, in each operator's argument order.
TEST(Flops, ConvolutionGeometryFromConcreteInputs) {
  const char* dims = "[[8, 64, 56, 56], [128, 64, 3, 3], [128], [], [], [], []]";
  // conv2d(x, w, b, stride 2, padding 1, dilation 1, groups 1): out 28 x 28.
  const double strided = 2.0 * (8 * 128 * 28 * 28) * 64 * 9;
  EXPECT_EQ(
      FlopsOf("aten::conv2d", dims, "", R"(["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "1"])").flops,
      strided);
  // The same call as aten::convolution (..., transposed False, output_padding, groups) and as
  // cudnn_convolution (x, w, padding, stride, dilation, groups, ...).
  EXPECT_EQ(FlopsOf("aten::convolution", dims, "",
                    R"(["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1"])")
                .flops,
            strided);
  EXPECT_EQ(FlopsOf("aten::cudnn_convolution", "[[8, 64, 56, 56], [128, 64, 3, 3]]", "",
                    R"(["", "", "[1, 1]", "[2, 2]", "[1, 1]", "1", "False", "False", "True"])")
                .flops,
            strided);
  // One number for every dimension; no padding and dilation 2: (56 - 2*2 - 1) / 1 + 1 = 52.
  EXPECT_EQ(FlopsOf("aten::conv2d", dims, "", R"(["", "", "", "1", "0", "2", "1"])").flops,
            2.0 * (8 * 128 * 52 * 52) * 64 * 9);
  // padding="same" keeps the size; "valid" is no padding.
  EXPECT_EQ(
      FlopsOf("aten::conv2d", dims, "", R"(["", "", "", "[1, 1]", "same", "[1, 1]", "1"])").flops,
      2.0 * (8 * 128 * 56 * 56) * 64 * 9);
  EXPECT_EQ(
      FlopsOf("aten::conv2d", dims, "", R"(["", "", "", "[1, 1]", "valid", "[1, 1]", "1"])").flops,
      2.0 * (8 * 128 * 54 * 54) * 64 * 9);
  // Transposed, x [2, 16, 8, 8], w [16, 4, 4, 4] (C, O/g), stride 2, padding 1: every input
  // element takes 4 * 16 multiply-adds; the output is 2 x 4 x 16 x 16.
  const OpFlops t =
      FlopsOf("aten::convolution", "[[2, 16, 8, 8], [16, 4, 4, 4], [4], [], [], [], [], [], []]",
              R"(["float", "float", "float"])",
              R"(["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "True", "[0, 0]", "1"])");
  EXPECT_EQ(t.flops, 2.0 * (2 * 16 * 8 * 8) * 4 * 16);
  EXPECT_EQ(t.bytes, 4.0 * ((2 * 4 * 16 * 16) + (2 * 16 * 8 * 8) + (16 * 4 * 4 * 4) + 4));
  // Without them: stride 1 and "same" padding, as before.
  EXPECT_EQ(FlopsOf("aten::conv2d", dims, "").flops, 2.0 * (8 * 128 * 56 * 56) * 64 * 9);
}

TEST(Flops, PeakTable) {
  EXPECT_EQ(PeakFor("NVIDIA A100-PG509-200").gpu, "A100 SXM");
  EXPECT_EQ(PeakFor("NVIDIA A100 80GB PCIe").hbm_tbps, 1.935);
  EXPECT_EQ(PeakFor("NVIDIA GB200").gpu, "GB200");  // not taken for a B200
  EXPECT_EQ(PeakFor("NVIDIA B200").For(Precision::kFp4), 9000);
  EXPECT_EQ(PeakFor("NVIDIA L40S").gpu, "L40S");  // not taken for an L4
  EXPECT_EQ(PeakFor("NVIDIA H100 80GB HBM3").For(Precision::kFp8), 1978.9);
  EXPECT_EQ(PeakFor("AMD Instinct MI300X VF").hbm_tbps, 5.3);
  EXPECT_EQ(PeakFor("AMD Instinct MI210").For(Precision::kTf32), 45.3);  // no TF32 on CDNA2
  EXPECT_EQ(PeakFor("AMD Instinct MI210").For(Precision::kFp8), 0);
  EXPECT_EQ(PeakFor("NVIDIA A100-SXM4-80GB").For(Precision::kFp16), 312);
  EXPECT_EQ(PeakFor("NVIDIA H100 PCIe").gpu, "H100 PCIe");
  EXPECT_EQ(PeakFor("NVIDIA H200").For(Precision::kTf32), 494.7);
  EXPECT_EQ(PeakFor("Tesla V100-SXM2-16GB").For(Precision::kTf32), 15.7);  // no TF32: fp32
  EXPECT_EQ(PeakFor("AMD Instinct MI300X").gpu, "MI300X");
  EXPECT_EQ(PeakFor("Some GPU").For(Precision::kFp32), 0);
}

// ProfilerStep#1 [0, 1000): aten::linear [100, 400) > aten::addmm [150, 300) launching a 200 ns
// kernel, then aten::mm [500, 600) launching a 100 ns Tensor Core kernel; a second step with no
// FLOPs. linear and addmm are the same work: the step counts it once.
trace::TraceModel Model() {
  trace::TraceModel m;
  m.tracks = {{.pid = 1, .tid = 1}, {.pid = 0, .tid = 7, .device = 0, .stream = 7}};
  m.devices = {{.id = 0, .name = "NVIDIA A100-SXM4-40GB"}};
  const auto op = [&](const char* name, int64_t ts, int64_t dur, const char* dims) {
    const size_t i = m.Add(EventKind::kCpuOp, name, ts, dur, 0);
    m.AddInputs(static_cast<uint32_t>(i),
                {m.names.Intern(dims), m.names.Intern("[\"float\", \"float\", \"float\"]")});
  };
  int64_t corr = 0;
  const auto launch = [&](const char* kernel, int64_t ts, int64_t gpu_ts, int64_t dur) {
    m.correlation.Set(m.Add(EventKind::kRuntime, "cudaLaunchKernel", ts, 5, 0), ++corr);
    m.correlation.Set(m.Add(EventKind::kKernel, kernel, gpu_ts, dur, 1), corr);
  };
  m.Add(EventKind::kUserAnnotation, "ProfilerStep#1", 0, 1000, 0);
  op("aten::linear", 100, 300, "[[100, 1000], [1000, 1000], [1000]]");
  op("aten::addmm", 150, 150, "[[1000], [100, 1000], [1000, 1000]]");
  launch("gemm_kernel", 160, 200, 200);
  op("aten::mm", 500, 100, "[[10, 100], [100, 1000]]");
  launch("ampere_sgemm_s1688gemm", 510, 700, 100);
  m.Add(EventKind::kUserAnnotation, "ProfilerStep#2", 1000, 1000, 0);
  m.LinkLaunches();
  return m;
}

TEST(Flops, PerOperatorAndStep) {
  const trace::TraceModel m = Model();
  const OpTree tree = BuildOpTree(m);
  const StepsResult steps = FindSteps(m, StepsMode::kAll);
  const FlopsResult f = ComputeFlops(m, tree, steps, {});
  EXPECT_TRUE(f.has_shapes);
  EXPECT_EQ(f.peak.gpu, "A100 SXM 40GB");
  ASSERT_EQ(f.operators.size(), 3u);
  // linear and addmm: 2e8 FLOPs each over 200 ns of kernel = 1000 TFLOP/s.
  EXPECT_EQ(f.operators[0].flops, 2e8);
  EXPECT_EQ(f.operators[0].device_ns, 200);
  EXPECT_DOUBLE_EQ(f.operators[0].tflops_per_s(), 1000);
  const FlopsRow& mm = f.operators[2];
  EXPECT_EQ(mm.name, "aten::mm");
  EXPECT_EQ(mm.precision, Precision::kTf32);  // fp32 on a Tensor Core kernel
  EXPECT_EQ(mm.flops, 2e6);
  EXPECT_DOUBLE_EQ(mm.tflops_per_s(), 20);
  EXPECT_DOUBLE_EQ(mm.intensity(), 2e6 / ((1000 + 100000 + 10000) * 4.0));
  ASSERT_EQ(f.steps.size(), 2u);
  EXPECT_EQ(f.steps[0].flops, 2e8 + 2e6);  // addmm inside linear counted once
  EXPECT_EQ(f.steps[1].flops, 0);
  EXPECT_EQ(f.main_precision, Precision::kFp32);
  const FlopsResult forced = ComputeFlops(m, tree, steps, {.peak_tflops = 50});
  EXPECT_EQ(forced.peak.For(Precision::kFp16), 50);
}

// The Operator view grouped by input shape: one row per operator and Input Dims.
TEST(OperatorViewByShape, OneRowPerShape) {
  trace::TraceModel m = Model();
  // A second aten::mm of another shape, without GPU work, and one of the first shape, one after
  // the other (calls at the same time would nest, and a same-name only child is one call).
  int64_t ts = 1500;
  for (const char* dims : {"[[1, 2], [2, 3]]", "[[10, 100], [100, 1000]]"}) {
    const size_t i = m.Add(EventKind::kCpuOp, "aten::mm", ts += 100, 10, 0);
    m.AddInputs(static_cast<uint32_t>(i), {m.names.Intern(dims)});
  }
  m.LinkLaunches();  // over the events added
  const std::vector<OperatorRow> rows = OperatorViewByShape(m, BuildOpTree(m));
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].name, "aten::linear");  // 200 ns device total, host total 300 > addmm's
  EXPECT_EQ(rows[1].name, "aten::addmm");
  EXPECT_EQ(rows[2].name, "aten::mm");
  EXPECT_EQ(rows[2].input_dims, "[[10, 100], [100, 1000]]");
  EXPECT_EQ(rows[2].calls, 2);
  EXPECT_EQ(rows[2].device_total_ns, 100);
  EXPECT_EQ(rows[2].host_total_ns, 110);
  EXPECT_EQ(rows[3].input_dims, "[[1, 2], [2, 3]]");
  EXPECT_EQ(rows[3].calls, 1);
}

// By call stack: one row per operator and stack; calls without one are left out, and a call with
// a stack but no dims is in it (and in no FLOPs).
TEST(OperatorViewByStack, OneRowPerStack) {
  trace::TraceModel m = Model();
  int64_t ts = 1500;
  for (const char* stack : {"a.py(1): f", "b.py(2): g", "a.py(1): f"}) {
    const size_t i = m.Add(EventKind::kCpuOp, "aten::mm", ts += 100, 10, 0);
    m.AddInputs(static_cast<uint32_t>(i), {.stack = m.names.Intern(stack)});
  }
  m.LinkLaunches();
  const OpTree tree = BuildOpTree(m);
  const std::vector<OperatorRow> rows = OperatorViewByStack(m, tree);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].call_stack, "a.py(1): f");  // host total 20 ns against 10
  EXPECT_EQ(rows[0].calls, 2);
  EXPECT_EQ(rows[1].call_stack, "b.py(2): g");
  EXPECT_EQ(OperatorViewByShape(m, tree).size(), 3u);  // the stacks-only calls have no shape
  EXPECT_EQ(ComputeFlops(m, tree, FindSteps(m, StepsMode::kAll), {}).operators.size(), 3u);
}

TEST(Flops, NoShapes) {
  trace::TraceModel m;
  m.tracks = {{.pid = 1, .tid = 1}};
  m.Add(EventKind::kCpuOp, "aten::mm", 0, 10, 0);
  const FlopsResult f = ComputeFlops(m, BuildOpTree(m), FindSteps(m, StepsMode::kAll), {});
  EXPECT_FALSE(f.has_shapes);
  EXPECT_TRUE(f.operators.empty());
}

TEST(MemcpyBandwidth, PerDirection) {
  trace::TraceModel m;
  m.tracks = {{.pid = 0, .tid = 7, .device = 0, .stream = 7}};
  const auto copy = [&](const char* name, int64_t dur, int64_t bytes) {
    const size_t i = m.Add(EventKind::kMemcpy, name, 0, dur, 0);
    if (bytes >= 0) m.memcpy_bytes.emplace_back(static_cast<uint32_t>(i), bytes);
  };
  copy("Memcpy HtoD (Pageable -> Device)", 1'000'000, 1'000'000);  // 1 GB/s over 1 ms
  copy("Memcpy HtoD (Pinned -> Device)", 1'000'000, 3'000'000);    // 3 GB/s
  copy("Memcpy DtoH (Device -> Pinned)", 500'000, 500);
  copy("Memcpy DtoD (Device -> Device)", 100, -1);  // no bytes
  const std::vector<MemcpyBandwidth> b = MemcpyBandwidthByDirection(m);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0].direction, "HtoD");
  EXPECT_EQ(b[0].copies, 2);
  EXPECT_EQ(b[0].bytes, 4000000);
  EXPECT_DOUBLE_EQ(b[0].bytes_per_s(), 2e9);
  EXPECT_EQ(b[0].max_bytes_per_s, 3000000000);
  EXPECT_EQ(b[1].direction, "DtoH");
  EXPECT_EQ(b[2].direction, "DtoD");
  EXPECT_EQ(b[2].copies, 1);
  EXPECT_EQ(b[2].bytes_per_s(), 0);
  EXPECT_EQ(MemcpyDirection("Memcpy PtoP (Device -> Device)"), "PtoP");
}

// On real traces recorded with record_shapes (none of ../shared has [memory] events): every
// aten::mm's FLOPs, recomputed from its Input Dims parsed as JSON, add up to the view's; the
// calls by shape add up to the Operator view's; every memcpy direction has a finite bandwidth.
TEST(Flops, RealTracesAgreeWithTheirInputDims) {
  TRAINPROF_SKIP_WITHOUT_SHARED_TRACES();
  const std::string dir = std::string(TRAINPROF_SHARED_DIR) + "/data/traces/";
  for (const char* folder : {"negative_queue_length_values_check", "trace_filter"}) {
    SCOPED_TRACE(folder);
    auto files = trace::ListTraceFiles(dir + folder);
    ASSERT_TRUE(files.ok());
    auto models = trace::ReadTraceFiles(*files, {});
    ASSERT_TRUE(models.ok());
    double all_mm = 0;
    for (const trace::TraceModel& m : *models) {
      ASSERT_FALSE(m.op_inputs.empty());
      double mm = 0;
      for (const auto& [e, set] : m.op_inputs) {
        const trace::OpInputs& in = m.input_sets[set];
        ASSERT_EQ(m.kind[e], EventKind::kCpuOp);
        if (m.name_of(e) != "aten::mm" || in.dims == trace::kNoName) continue;
        const nlohmann::json d = nlohmann::json::parse(m.names[in.dims]);
        mm += 2.0 * d[0][0].get<double>() * d[0][1].get<double>() * d[1][1].get<double>();
      }
      const OpTree tree = BuildOpTree(m);
      const FlopsResult f = ComputeFlops(m, tree, FindSteps(m, StepsMode::kAll), {});
      double view = 0;
      for (const FlopsRow& r : f.operators)
        if (r.name == "aten::mm") view += r.flops;
      all_mm += mm;
      EXPECT_DOUBLE_EQ(view, mm);
      std::map<std::string, int64_t> calls;
      int64_t by_shape = 0, with_dims = 0;
      for (const OperatorRow& r : OperatorViewByShape(m, tree)) {
        calls[r.name] += r.calls;
        by_shape += r.calls;
      }
      // Every call with dims, found by plain binary search; a call merged into a parent with dims
      // is one call with it (MergedIntoParent).
      auto has_dims = [&](const OpNode& n) {
        return m.kind[n.event] == EventKind::kCpuOp && m.InputsOf(n.event) != nullptr &&
               !IsExcludedFromOperatorView(m.name_of(n.event));
      };
      const std::vector<bool> merged = MergedIntoParent(m, tree);
      std::vector<bool> in_row(tree.nodes.size());  // in a row: its own, or its parent's
      for (size_t k = 0; k < tree.nodes.size(); ++k) {
        const bool into_parent = merged[k] && in_row[static_cast<size_t>(tree.nodes[k].parent)];
        in_row[k] = has_dims(tree.nodes[k]) || into_parent;
        with_dims += has_dims(tree.nodes[k]) && !into_parent;
      }
      EXPECT_EQ(by_shape, with_dims);
      EXPECT_GT(with_dims, 0);
      for (const OperatorRow& r : OperatorView(m, tree))
        if (calls.count(r.name)) {
          EXPECT_LE(calls[r.name], r.calls) << r.name;
        }
      for (const MemcpyBandwidth& b : MemcpyBandwidthByDirection(m)) {
        EXPECT_GT(b.bytes_per_s(), 0) << b.direction;
        EXPECT_LT(b.bytes_per_s(), 5e12) << b.direction;
      }
    }
    EXPECT_GT(all_mm, 0);
  }
}

}  // namespace
}  // namespace trainprof::analysis
