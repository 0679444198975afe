// MFU and roofline: the FLOPs of the dense operators from their "Input Dims" and "Input type"
// (record_shapes=True), the TFLOP/s they achieved over their device time, and the share of the
// GPU's peak that is (model FLOPs utilization).
//
//   FLOPs of one call (multiply-add = 2 FLOPs):
//     aten::mm          [m,k] x [k,n]                      2 m k n
//     aten::addmm       bias, [m,k], [k,n]                 2 m k n
//     aten::bmm         [b,m,k] x [b,k,n]                  2 b m k n   (aten::baddbmm alike)
//     aten::linear      x [..., k], weight [n, k]          2 (x's rows) k n
//     convolution       x [N,C,*S], w [O,C/g,*K]           2 N O prod(S') (C/g) prod(K)
//                       S' the output's size from "Concrete Inputs" (PyTorch 2.x: stride,
//                       padding, dilation, transposed); without them, the input's (stride 1,
//                       "same" padding: a strided conv is then over-counted). Transposed:
//                       w [C,O/g,*K], 2 N C prod(S) (O/g) prod(K)
//     scaled_dot_product_attention q [B,H,L,E], k [B,H,S,E], v [B,H,S,Ev]
//                                                          2 B H L S (E + Ev)
//   Bytes (for the arithmetic intensity): the input tensors and the output, at the dtype's size.
//
//   FlopsResult f = ComputeFlops(model, tree, steps, {});
//   for (const FlopsRow& r : f.operators) ... r.tflops_per_s() ...
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/categories.h"
#include "analysis/op_tree.h"
#include "analysis/peaks.h"
#include "analysis/steps.h"
#include "trace/trace_model.h"

namespace trainprof::analysis {

// One operator's FLOPs per call; 0 when the operator is not one of the above or its dims do not
// fit. `dims`, `types` and `concrete` ("Concrete Inputs", may be empty) are the args' JSON text.
struct OpFlops {
  double flops = 0;
  double bytes = 0;  // 0 when unknown
  Precision precision = Precision::kUnknown;
};
OpFlops FlopsOf(std::string_view op, std::string_view dims, std::string_view types,
                std::string_view concrete = {});

struct FlopsRow {
  std::string name;
  Precision precision = Precision::kUnknown;
  int64_t calls = 0;
  double flops = 0, bytes = 0;
  int64_t device_ns = 0;  // device total time of those calls
  double tflops_per_s() const { return device_ns > 0 ? flops / device_ns / 1e3 : 0; }
  double intensity() const { return bytes > 0 ? flops / bytes : 0; }
};

// The roofline of one operator at one input shape and dtype: its innermost calls that have a
// formula (aten::addmm, not the aten::linear above it), or, for elementwise, normalization and
// reduction operators that launch kernels themselves, the bytes they move:
//   elementwise    FLOPs = output elements, bytes = inputs + output (output: the largest input)
//   normalization  FLOPs = 5 x elements, bytes = the input twice (read, write) + weights
//   reduction      FLOPs = elements, bytes = the input
struct ShapeRow {
  std::string name;   // "aten::addmm"
  std::string dims;   // its Input Dims, "[[512], [141, 512], [512, 512], [], []]"
  std::string dtype;  // the first input's type, "c10::BFloat16"
  OpCategory category = OpCategory::kOther;
  Precision precision = Precision::kUnknown;
  int64_t calls = 0;
  double flops = 0, bytes = 0;
  int64_t device_ns = 0;  // the calls' device total (their children's kernels too)
  double tflops_per_s() const { return device_ns > 0 ? flops / device_ns / 1e3 : 0; }
  double tbps() const { return device_ns > 0 ? bytes / device_ns / 1e3 : 0; }
  double intensity() const { return bytes > 0 ? flops / bytes : 0; }
};

// Where a row sits on the device's roofline: bound by compute when its FLOPs/byte reach the
// ridge point (peak FLOP/s / bandwidth), and its time against the roofline's,
// max(FLOPs / peak, bytes / bandwidth), in percent. `known` is false without a peak for its
// precision or a bandwidth.
struct RooflinePoint {
  bool known = false;
  bool compute_bound = false;
  double pct = 0;
};
RooflinePoint Roofline(const ShapeRow& r, const PeakTflops& peak);

struct StepFlops {
  std::string step;
  double flops = 0;  // of the outermost counted operators that started in the step
  int64_t dur_ns = 0;
  double tflops_per_s() const { return dur_ns > 0 ? flops / dur_ns / 1e3 : 0; }
};

struct FlopsOptions {
  double peak_tflops = 0;  // --peak-tflops: used for every precision when > 0
  double peak_tbps = 0;    // --peak-tbps: the memory bandwidth, TB/s, when > 0
};

struct FlopsResult {
  bool has_shapes = false;          // the trace has Input Dims (record_shapes=True)
  std::string device_name;          // the GPU the peak is for ("" when the trace names none)
  PeakTflops peak;                  // from the table, or every field --peak-tflops
  std::vector<FlopsRow> operators;  // by FLOPs, largest first
  std::vector<StepFlops> steps;
  std::vector<ShapeRow> shapes;                    // the roofline, by device time, largest first
  Precision main_precision = Precision::kUnknown;  // of most FLOPs: the MFU's peak
  // Coverage: the part of the trace's GPU time (OpTree::gpu_ns) under an operator with a FLOP
  // formula (its outermost counted operator's device total), and the largest rest by the
  // operator that launched it (name, ns; "no operator" for GPU work none launched), largest
  // first, at most 3.
  int64_t covered_ns = 0;
  std::vector<std::pair<std::string, int64_t>> uncovered;
};

FlopsResult ComputeFlops(const trace::TraceModel& m, const OpTree& tree, const StepsResult& steps,
                         const FlopsOptions& o);

}  // namespace trainprof::analysis
