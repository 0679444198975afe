// A generator of small Kineto-format (PyTorch profiler) traces with answers known exactly. A test
// describes the steps (CPU ops, a data-loader range, GPU work with the runtime call that launched
// it) and a rank (clock skew, slowdown); the generator writes the JSON as today's Kineto writes it
// and returns, beside it, the figures the trace was built to give: per step its time, GPU busy
// and idle time, the Overview categories, communication and its overlap with computation, launch
// delays; for the whole trace GPU utilization and HTA's breakdowns. The figures follow the
// definitions of docs/trace-analysis.md and are computed from the description by a sweep over
// elementary time segments, with no code of src/analysis/, so a test comparing the two can fail.
//
//   testutil::GenTrace t;
//   testutil::GenStep s{.host_dur_ns = 1'000'000, .data_loader_ns = 300'000};
//   s.gpu_ops.push_back({.name = "ampere_sgemm_64x64_nn", .start_ns = 400'000,
//                        .dur_ns = 200'500, .launch_delay_ns = 20'000});
//   t.steps = {s, s, s};
//   StatusOr<testutil::GeneratedTrace> g = testutil::GenerateKinetoTrace(t, {.rank = 0});
//   std::ofstream(dir + "/rank0.pt.trace.json") << g->json;
//   // g->expected.steps[0].dur_ns == 1'000'000, .overview_ns[kGenDataLoader] == 300'000
//
// Times are integer nanoseconds; the JSON writes them as microseconds with three decimals at a
// 2024 epoch, so fractional microseconds (0.5 µs) test that the reader keeps exact ns.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "trainprof/status.h"

namespace trainprof::testutil {

enum class GenGpuKind { kKernel, kMemcpy, kMemset };

// The args PyTorch writes on a collective's kernel ("Collective name", "Process Group Name",
// "Seq", "In/Out msg nelems", "dtype", "Group size"); a seq < 0 is left out.
struct GenCollective {
  std::string name = "allreduce";
  std::string group = "0";
  int64_t seq = -1;
  int64_t nelems = 0;
  std::string dtype = "Float";
  int64_t group_size = 0;
};

// GPU work and the runtime call that launched it (cudaLaunchKernel, cudaMemcpyAsync,
// cudaMemsetAsync). The call starts launch_delay_ns before the GPU work and must lie inside the
// step's host range.
struct GenGpuOp {
  GenGpuKind kind = GenGpuKind::kKernel;
  std::string name;  // "ampere_sgemm_64x64_nn", "ncclKernel_AllReduce_RING_LL_Sum_float",
                     // "Memcpy HtoD (Pageable -> Device)", "Memset (Device)"
  int64_t stream = 7;
  int64_t start_ns = 0;  // GPU start, from the step's host start
  int64_t dur_ns = 0;
  int64_t launch_delay_ns = 0;  // GPU start - start of the launch call
  int64_t launch_dur_ns = 5'000;
  int64_t bytes = 1'048'576;                // a memcpy's or memset's "bytes"
  double blocks_per_sm = -1;                // written as "blocks per SM" when >= 0
  double occupancy_pct = -1;                // written as "est. achieved occupancy %" when >= 0
  std::optional<GenCollective> collective;  // a kernel's collective args
};

// A host range: "aten::linear" (cpu_op), "nccl:all_reduce" (user_annotation), a cuda_runtime
// call that launches nothing ("cudaStreamSynchronize"), a python_function.
struct GenCpuOp {
  std::string name;
  std::string category = "cpu_op";
  int64_t start_ns = 0;  // from the step's host start
  int64_t dur_ns = 0;
  // record_shapes: written as "Input Dims" / "Input type" when not empty (JSON arrays' text).
  std::string input_dims, input_types;
  std::string call_stack;  // written as "Call stack" when not empty
};

struct GenStep {
  int64_t host_dur_ns = 0;    // the ProfilerStep#N range
  int64_t gap_before_ns = 0;  // host time between the previous step's range and this one
  // "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__" (user_annotation, as Kineto
  // names it) at the step's start; 0: none.
  int64_t data_loader_ns = 0;
  std::vector<GenCpuOp> cpu_ops;
  std::vector<GenGpuOp> gpu_ops;
};

// One `[memory]` instant event: the allocator's total at a time from the first step's start.
struct GenMemorySample {
  int64_t at_ns = 0;
  int64_t total_allocated_bytes = 0;
  int64_t addr = 140'000'000'000;  // "Addr": an allocation and its free share one
};

struct GenTrace {
  std::vector<GenStep> steps;
  int64_t first_step_number = 1;                      // ProfilerStep#<first_step_number>, ...
  int64_t epoch_ns = 1'712'195'495'519'689'000;       // the first step's host start (2024-04-04)
  int64_t world_size = 1;                             // distributedInfo
  std::string backend = "nccl";                       // distributedInfo
  int64_t device = 0;                                 // args.device of the GPU work
  std::string device_name = "NVIDIA A100-SXM4-80GB";  // deviceProperties
  int64_t total_memory_bytes = 85'899'345'920;
  int64_t compute_major = 8, compute_minor = 0, num_sms = 108;
  bool flows = true;      // ac2g flow pairs between launch calls and GPU work
  std::string host_name;  // written as the top-level "hostname" when not empty
  std::vector<GenMemorySample> memory;
};

struct GenRank {
  int64_t rank = 0;
  int64_t skew_ns = 0;  // this rank's clock offset: added to every timestamp
  // Every duration and offset of the description times num / den (20 % slower: 6 / 5), applied
  // before anything is written or computed, so the figures hold exactly for the scaled trace.
  int64_t slowdown_num = 1, slowdown_den = 1;
};

// The Overview categories in analysis::Category's order (its priority).
enum GenCategory {
  kGenKernel,
  kGenMemcpy,
  kGenMemset,
  kGenCommunication,
  kGenRuntime,
  kGenDataLoader,
  kGenCpuExec,
  kGenOther,
  kGenNumCategories
};

// HTA's default thresholds (analysis::HtaOptions), which the expected figures use.
inline constexpr int64_t kGenKernelWaitNs = 30'000;
inline constexpr int64_t kGenRuntimeCutoffNs = 50'000;
inline constexpr int64_t kGenLaunchDelayCutoffNs = 100'000;

struct ExpectedStep {
  std::string name;  // "ProfilerStep#1"
  int64_t begin_ns = 0, end_ns = 0, dur_ns = 0;
  int64_t launches = 0;
  int64_t gpu_busy_ns = 0;       // union of kernels, memcpy and memset inside the step
  int64_t gpu_idle_ns = 0;       // dur_ns - gpu_busy_ns
  int64_t kernel_ns = 0;         // union of the step's kernels (computation and communication)
  int64_t memcpy_ns = 0;         // union of memcpy
  int64_t memset_ns = 0;         // union of memset
  int64_t communication_ns = 0;  // union of communication kernels
  int64_t comm_overlap_ns = 0;   // communication kernels while computation kernels run
  // Each category gets the time no higher one claims; they sum to dur_ns.
  std::array<int64_t, kGenNumCategories> overview_ns{};
  std::vector<int64_t> launch_delays_ns;  // GPU start - launch call end, in description order
};

struct ExpectedIdle {
  int64_t stream = -1;
  std::array<int64_t, 3> ns{};    // host wait, kernel wait, other
  std::array<int64_t, 3> gaps{};  // idle intervals of each
};

struct Expected {
  int64_t rank = 0;
  std::vector<ExpectedStep> steps;   // the steps the analysis keeps
  std::vector<std::string> dropped;  // trailing steps under 80 % of the previous one's launches

  // GPU summary over [first step begin, last step end].
  int64_t span_ns = 0;
  int64_t kernels = 0, kernel_ns = 0;  // kernel count on the device, durations clipped to the span
  int64_t kernel_busy_ns = 0;          // union of kernels inside the span
  double utilization_pct = 0;
  std::optional<double> sm_efficiency_pct, occupancy_pct;

  // HTA, on the GPU work launched inside the kept steps.
  int64_t gpu_events = 0;
  int64_t hta_span_ns = 0, hta_idle_ns = 0, hta_compute_ns = 0, hta_non_compute_ns = 0;
  std::vector<ExpectedIdle> idle;               // by stream, ascending
  std::map<std::string, int64_t> kernel_types;  // "COMPUTATION overlapping COMMUNICATION", ...
  int64_t communication_ns = 0, comm_overlap_ns = 0;
  double comm_overlap_pct = 0;  // 0 without communication
  int64_t launches = 0, short_kernels = 0, runtime_outliers = 0, launch_delay_outliers = 0;
  double mean_delay_ns = 0, median_delay_ns = 0, p95_delay_ns = 0, max_delay_ns = 0;
  double mean_launch_ns = 0;

  int64_t peak_allocated_bytes = -1;  // from the memory samples; -1 without
  // The memory samples' changes by the innermost cpu_op around them ([start, end)), and the
  // count of samples inside none.
  std::map<std::string, int64_t> memory_self_increase;
  int64_t memory_unattributed = 0;
};

struct GeneratedTrace {
  std::string json;
  Expected expected;
};

// Writes the trace of `spec` as seen by `rank`. Errors: a launch call or CPU op outside its step's
// host range, a negative duration, or a slowdown with a zero denominator.
StatusOr<GeneratedTrace> GenerateKinetoTrace(const GenTrace& spec, const GenRank& rank);

}  // namespace trainprof::testutil
