// One test per row of docs/trace-format.md: a small trace in the shape today's writers emit it
// (Kineto's ChromeTraceLogger, PyTorch's op metadata, the ROCm path), and what a correct reader
// makes of it. Each row of the doc names the writer's source.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "trace/kineto/kineto_reader.h"
#include "util/diagnostics.h"
#include "util/golden.h"

namespace trainprof::trace {
namespace {

constexpr size_t kMissing = std::numeric_limits<size_t>::max();

// Index of the first event called `name` (of kind `k`, when given), or kMissing.
size_t IndexOf(const TraceModel& m, std::string_view name) {
  for (size_t i = 0; i < m.size(); ++i)
    if (m.name_of(i) == name) return i;
  return kMissing;
}
size_t IndexOf(const TraceModel& m, std::string_view name, EventKind k) {
  for (size_t i = 0; i < m.size(); ++i)
    if (m.kind[i] == k && m.name_of(i) == name) return i;
  return kMissing;
}

bool IsValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len = 0;
    uint32_t cp = 0;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
      cp = c & 0x1Fu;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      cp = c & 0x0Fu;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      cp = c & 0x07u;
    } else {
      return false;
    }
    if (i + len > s.size()) return false;
    for (size_t k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3Fu);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += len;
  }
  return true;
}

TEST(TraceFormat, ArgsObjectsAndArrays) {
  const char* t = R"J({"schemaVersion": 1, "traceEvents": [
  {
    "ph": "X", "cat": "cpu_op", "name": "aten::cat", "pid": 4242, "tid": 4242,
    "ts": 10.000, "dur": 20.000,
    "args": {
      "External id": 3,"Record function id": 0, "Ev Idx": 2,
      "Input Dims": [[[2, 3], [4, 3]], []], "Input Strides": [[[3, 1], [3, 1]], []],
      "Input type": ["TensorList", "Scalar"], "Concrete Inputs": ["", "0"],
      "Sequence number": 5, "Fwd thread id": 0
    }
  },
  {
    "ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 4242, "tid": 4242,
    "ts": 12.000, "dur": 4.000,
    "args": {
      "External id": 3,"cbid": 211, "correlation": 77
    }
  },
  {
    "ph": "X", "cat": "kernel", "name": "void at::native::CatArrayBatchedCopy<float>()", "pid": 0, "tid": 7,
    "ts": 20.000, "dur": 3.500,
    "args": {
      "External id": 3,"queued": 0, "device": 0, "context": 1, "stream": 7, "correlation": 77,
      "registers per thread": 32, "shared memory": 0, "blocks per SM": 0.5, "warps per SM": 2,
      "grid": [54, 1, 1], "block": [128, 1, 1], "est. achieved occupancy %": 25,
      "occupancy": {"activeBlocksPerMultiprocessor": 16, "limitingFactors": "WARPS|REGS",
        "blockLimitRegs": 16, "blockLimitSharedMem": 32, "blockLimitWarps": 16,
        "blockLimitBlocks": 32, "blockLimitBarriers": 32, "allocatedRegistersPerBlock": 4096,
        "allocatedSharedMemPerBlock": 0},
      "graph id": 0, "graph node id": 0, "channel": 0, "channel_type": 0
    }
  }
]})J";
  auto m = ParseTrace(t, "args.json");
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m->size(), 3u);
  EXPECT_EQ(m->kind[0], EventKind::kCpuOp);
  EXPECT_EQ(m->external_id[0], 3);
  EXPECT_EQ(m->stream_of(0), -1);  // "stream" inside nested values is not the event's
  EXPECT_EQ(m->kind[2], EventKind::kKernel);
  EXPECT_EQ(m->stream_of(2), 7);
  EXPECT_EQ(m->device_of(2), 0);
  EXPECT_EQ(m->correlation[2], 77);
  EXPECT_FLOAT_EQ(m->blocks_per_sm_of(2), 0.5f);
  EXPECT_FLOAT_EQ(m->occupancy_pct_of(2), 25.0f);
  EXPECT_EQ(m->launcher[2], 1);
  EXPECT_EQ(testutil::FindDiagnostic(m->diagnostics, "missing_fields"), nullptr);
  EXPECT_EQ(testutil::FindDiagnostic(m->diagnostics, "unknown_category"), nullptr);
}

TEST(TraceFormat, IdsAboveInt64Max) {
  // "Comms Id" is a 64-bit hash (c10::get_hash), often above INT64_MAX; Kineto declares
  // "correlation" and "Record function id" uint64 too. Equal ids must stay equal.
  const char* t = R"J({"schemaVersion": 1, "traceEvents": [
  {
    "ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 4242, "tid": 4242,
    "ts": 10.000, "dur": 30.000,
    "args": {
      "External id": 2099,"Record function id": 1959, "Collective name": "allreduce",
      "dtype": "Float", "In msg nelems": 2049000, "Out msg nelems": 2049000, "Group size": 2,
      "Process Group Name": "0", "Process Group Description": "default_pg",
      "Process Group Ranks": "[0, 1]", "Rank": 0, "Seq": 4, "Comms Id": 17553024591251385473
    }
  },
  {
    "ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 4242, "tid": 4242,
    "ts": 12.000, "dur": 4.000,
    "args": {
      "External id": 2099,"cbid": 211, "correlation": 9223372036854775809
    }
  },
  {
    "ph": "s", "id": 9223372036854775809, "pid": 4242, "tid": 4242, "ts": 12.000,
    "cat": "ac2g", "name": "ac2g"
  },
  {
    "ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "pid": 0, "tid": 20,
    "ts": 20.000, "dur": 15.000,
    "args": {
      "External id": 2099,"device": 0, "stream": 20, "correlation": 9223372036854775809,
      "Collective name": "allreduce", "In msg nelems": 2049000, "Out msg nelems": 2049000,
      "Group size": 2, "dtype": "Float", "Process Group Name": "0", "Seq": 4,
      "Comms Id": 17553024591251385473
    }
  },
  {
    "ph": "f", "id": 9223372036854775809, "pid": 0, "tid": 20, "ts": 20.000,
    "cat": "ac2g", "name": "ac2g", "bp": "e"
  }
]})J";
  auto m = ParseTrace(t, "comms_id.json");
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m->size(), 3u);
  EXPECT_NE(m->correlation[1], kNone);
  EXPECT_EQ(m->correlation[2], m->correlation[1]);
  EXPECT_EQ(m->launcher[2], 1);
  EXPECT_EQ(m->external_id[2], 2099);
  EXPECT_EQ(testutil::FindDiagnostic(m->diagnostics, "missing_fields"), nullptr);
  EXPECT_EQ(testutil::FindDiagnostic(m->diagnostics, "unpaired_flows"), nullptr);
}

TEST(TraceFormat, CudaSync) {
  // Since kineto#1356 a "Stream Sync" sits on tid stream + 1,000,000; the real stream is in args.
  // "Context Sync" has no stream: stream -1, tid 1 (older Kineto: 4294967295 and tid -1).
  const char* t = R"J({"schemaVersion": 1, "traceEvents": [
  {
    "ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 4242, "tid": 4242,
    "ts": 100.000, "dur": 4.000,
    "args": {"External id": 14,"cbid": 211, "correlation": 14}
  },
  {"ph": "s", "id": 14, "pid": 4242, "tid": 4242, "ts": 100.000, "cat": "ac2g", "name": "ac2g"},
  {
    "ph": "X", "cat": "kernel", "name": "void add_kernel<float>(float*, int)", "pid": 0, "tid": 7,
    "ts": 105.000, "dur": 50.000,
    "args": {"External id": 14,"queued": 0, "device": 0, "context": 1, "stream": 7, "correlation": 14}
  },
  {"ph": "f", "id": 14, "pid": 0, "tid": 7, "ts": 105.000, "cat": "ac2g", "name": "ac2g", "bp": "e"},
  {
    "ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "pid": 4242, "tid": 4242,
    "ts": 106.000, "dur": 50.000,
    "args": {"External id": 15,"cbid": 131, "correlation": 15}
  },
  {"ph": "s", "id": 15, "pid": 4242, "tid": 4242, "ts": 106.000, "cat": "ac2g", "name": "ac2g"},
  {
    "name": "thread_name", "ph": "M", "ts": 106.001, "pid": 0, "tid": 1000007,
    "args": {"name": "stream 7 (sync)"}
  },
  {
    "name": "thread_sort_index", "ph": "M", "ts": 106.001, "pid": 0, "tid": 1000007,
    "args": {"sort_index": 7}
  },
  {
    "ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": 0, "tid": 1000007,
    "ts": 106.001, "dur": 49.500,
    "args": {"External id": 15,"cuda_sync_kind": "Stream Sync", "stream": 7, "correlation": 15, "device": 0, "context": 1}
  },
  {"ph": "f", "id": 15, "pid": 0, "tid": 1000007, "ts": 106.001, "cat": "ac2g", "name": "ac2g", "bp": "e"},
  {
    "ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "pid": 4242, "tid": 4242,
    "ts": 157.000, "dur": 3.000,
    "args": {"External id": 20,"cbid": 165, "correlation": 20}
  },
  {"ph": "s", "id": 20, "pid": 4242, "tid": 4242, "ts": 157.000, "cat": "ac2g", "name": "ac2g"},
  {
    "ph": "X", "cat": "cuda_sync", "name": "Context Sync", "pid": 0, "tid": 1,
    "ts": 157.500, "dur": 2.000,
    "args": {"External id": 20,"cuda_sync_kind": "Context Sync", "stream": -1, "correlation": 20, "device": 0, "context": 1}
  },
  {"ph": "f", "id": 20, "pid": 0, "tid": 1, "ts": 157.500, "cat": "ac2g", "name": "ac2g", "bp": "e"}
]})J";
  auto m = ParseTrace(t, "cuda_sync.json");
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m->size(), 6u);
  EXPECT_EQ(testutil::FindDiagnostic(m->diagnostics, "unknown_category"), nullptr);
  EXPECT_EQ(testutil::FindDiagnostic(m->diagnostics, "unpaired_flows"), nullptr);
  const size_t k = IndexOf(*m, "void add_kernel<float>(float*, int)");
  const size_t ss = IndexOf(*m, "Stream Sync");
  const size_t cs = IndexOf(*m, "Context Sync");
  ASSERT_NE(k, kMissing);
  ASSERT_NE(ss, kMissing);
  ASSERT_NE(cs, kMissing);
  EXPECT_EQ(m->launcher[k], 0);  // the kernel still links to its cudaLaunchKernel
  for (size_t s : {ss, cs}) {
    EXPECT_FALSE(IsGpuKind(m->kind[s])) << "a sync is not GPU work";
    EXPECT_NE(m->kind[s], EventKind::kRuntime);
    EXPECT_EQ(m->launcher[s], -1);
    EXPECT_EQ(m->device_of(s), 0);
  }
  EXPECT_EQ(m->stream_of(ss), 7);  // the stream, not the display row 1000007
  EXPECT_EQ(m->stream_of(cs), -1);
}

// cudaStreamWaitEvent's "Stream Wait Event" names the stream it waits on, and in newer Kineto
// the cudaEventRecord call's correlation id: the critical path's event sync edges use both.
TEST(TraceFormat, StreamWaitEvent) {
  const char* t = R"J({"schemaVersion": 1, "traceEvents": [
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamWaitEvent", "pid": 1, "tid": 1,
   "ts": 10.0, "dur": 2.0, "args": {"External id": 5, "correlation": 5170}},
  {"ph": "X", "cat": "cuda_sync", "name": "Stream Wait Event", "pid": 0, "tid": 20,
   "ts": 11.0, "dur": 0.003, "args": {"External id": 5170, "cuda_sync_kind": "Stream Wait Event",
   "wait_on_stream": 7, "wait_on_cuda_event_id": 1, "wait_on_cuda_event_record_corr_id": 5168,
   "stream": 20, "correlation": 5170, "device": 0, "context": 1}},
  {"ph": "X", "cat": "cuda_sync", "name": "Event Sync", "pid": 0, "tid": 20,
   "ts": 12.0, "dur": 1.0, "args": {"wait_on_stream": 9, "stream": 20, "correlation": 5171}}
]})J";
  auto m = ParseTrace(t, "wait.json");
  ASSERT_TRUE(m.ok()) << m.status().message();
  const size_t w = IndexOf(*m, "Stream Wait Event"), e = IndexOf(*m, "Event Sync");
  ASSERT_NE(w, kMissing);
  ASSERT_NE(e, kMissing);
  ASSERT_NE(m->SyncWaitOf(w), nullptr);
  EXPECT_EQ(m->SyncWaitOf(w)->stream, 7);
  EXPECT_EQ(m->SyncWaitOf(w)->record_correlation, 5168);
  EXPECT_EQ(m->stream_of(w), 20);
  ASSERT_NE(m->SyncWaitOf(e), nullptr);
  EXPECT_EQ(m->SyncWaitOf(e)->stream, 9);
  EXPECT_EQ(m->SyncWaitOf(e)->record_correlation, -1);
  EXPECT_EQ(m->SyncWaitOf(0), nullptr);
}

TEST(TraceFormat, GpuUserAnnotation) {
  // A record_function range drawn on the GPU stream: pid = device, tid = stream, the span of its
  // kernels widened by 1 ns each side (ts - 1 ns, dur + 2 ns), External id = the CPU range's id.
  const char* t = R"J({"schemaVersion": 1, "traceEvents": [
  {
    "ph": "X", "cat": "user_annotation", "name": "## forward ##", "pid": 4242, "tid": 4242,
    "ts": 90.000, "dur": 30.000,
    "args": {"External id": 4,"Record function id": 0, "Ev Idx": 3}
  },
  {
    "ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 4242, "tid": 4242,
    "ts": 95.000, "dur": 4.000,
    "args": {"External id": 5,"cbid": 211, "correlation": 5}
  },
  {
    "ph": "X", "cat": "kernel", "name": "void gemm_kernel()", "pid": 0, "tid": 7,
    "ts": 100.500, "dur": 10.000,
    "args": {"External id": 5,"device": 0, "stream": 7, "correlation": 5}
  },
  {
    "ph": "X", "cat": "gpu_user_annotation", "name": "## forward ##", "pid": 0, "tid": 7,
    "ts": 100.499, "dur": 10.002,
    "args": {"External id": 4}
  }
]})J";
  auto m = ParseTrace(t, "gpu_user_annotation.json");
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m->size(), 4u);
  const size_t g = IndexOf(*m, "## forward ##", EventKind::kGpuUserAnnotation);
  ASSERT_NE(g, kMissing);
  EXPECT_EQ(m->ts_ns[g], 100499);
  EXPECT_EQ(m->dur_ns[g], 10002);
  EXPECT_FALSE(IsGpuKind(m->kind[g]));
  EXPECT_EQ(m->external_id[g], 4);
  EXPECT_EQ(m->launcher[g], -1);
  EXPECT_EQ(m->launcher[2], 1);
  EXPECT_EQ(testutil::FindDiagnostic(m->diagnostics, "unknown_category"), nullptr);
}

TEST(TraceFormat, CudaDriverLaunch) {
  // Triton (torch.compile) launches through the driver API: cuLaunchKernel carries the
  // correlation its kernel has, and starts the ac2g flow.
  const char* t = R"J({"schemaVersion": 1, "traceEvents": [
  {
    "ph": "X", "cat": "cuda_driver", "name": "cuLaunchKernel", "pid": 4242, "tid": 4242,
    "ts": 200.000, "dur": 6.000,
    "args": {"External id": 30,"cbid": 307, "correlation": 30}
  },
  {"ph": "s", "id": 30, "pid": 4242, "tid": 4242, "ts": 200.000, "cat": "ac2g", "name": "ac2g"},
  {
    "ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 4242, "tid": 4242,
    "ts": 207.000, "dur": 4.000,
    "args": {"External id": 31,"cbid": 211, "correlation": 31}
  },
  {"ph": "s", "id": 31, "pid": 4242, "tid": 4242, "ts": 207.000, "cat": "ac2g", "name": "ac2g"},
  {
    "ph": "X", "cat": "kernel", "name": "triton_poi_fused_add_0", "pid": 0, "tid": 7,
    "ts": 210.000, "dur": 3.000,
    "args": {"External id": 30,"device": 0, "stream": 7, "correlation": 30}
  },
  {"ph": "f", "id": 30, "pid": 0, "tid": 7, "ts": 210.000, "cat": "ac2g", "name": "ac2g", "bp": "e"},
  {
    "ph": "X", "cat": "kernel", "name": "void vectorized_elementwise_kernel()", "pid": 0, "tid": 7,
    "ts": 214.000, "dur": 2.000,
    "args": {"External id": 31,"device": 0, "stream": 7, "correlation": 31}
  },
  {"ph": "f", "id": 31, "pid": 0, "tid": 7, "ts": 214.000, "cat": "ac2g", "name": "ac2g", "bp": "e"}
]})J";
  auto m = ParseTrace(t, "cuda_driver.json");
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m->size(), 4u);
  EXPECT_EQ(m->kind[0], EventKind::kDriver);
  EXPECT_EQ(m->launcher[2], 0);  // the Triton kernel: its cuLaunchKernel
  EXPECT_EQ(m->launcher[3], 1);
  EXPECT_EQ(testutil::FindDiagnostic(m->diagnostics, "unpaired_flows"), nullptr);
  EXPECT_EQ(testutil::FindDiagnostic(m->diagnostics, "unknown_category"), nullptr);
}

TEST(TraceFormat, CudaGraphLaunch) {
  // One cudaGraphLaunch, then every node's kernel or copy with that call's correlation id, one
  // flow end each, and "graph id" / "graph node id".
  const char* t = R"J({"schemaVersion": 1, "traceEvents": [
  {
    "ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "pid": 4242, "tid": 4242,
    "ts": 300.000, "dur": 12.000,
    "args": {"External id": 40,"cbid": 311, "correlation": 40}
  },
  {"ph": "s", "id": 40, "pid": 4242, "tid": 4242, "ts": 300.000, "cat": "ac2g", "name": "ac2g"},
  {
    "ph": "X", "cat": "kernel", "name": "void gemm_a()", "pid": 0, "tid": 7, "ts": 315.000, "dur": 5.000,
    "args": {"External id": 40,"device": 0, "stream": 7, "correlation": 40, "graph id": 1, "graph node id": 4294967297}
  },
  {"ph": "f", "id": 40, "pid": 0, "tid": 7, "ts": 315.000, "cat": "ac2g", "name": "ac2g", "bp": "e"},
  {
    "ph": "X", "cat": "kernel", "name": "void gemm_b()", "pid": 0, "tid": 7, "ts": 321.000, "dur": 5.000,
    "args": {"External id": 40,"device": 0, "stream": 7, "correlation": 40, "graph id": 1, "graph node id": 4294967298}
  },
  {"ph": "f", "id": 40, "pid": 0, "tid": 7, "ts": 321.000, "cat": "ac2g", "name": "ac2g", "bp": "e"},
  {
    "ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoD (Device -> Device)", "pid": 0, "tid": 7, "ts": 327.000, "dur": 1.000,
    "args": {"External id": 40,"device": 0, "context": 1, "stream": 7, "correlation": 40, "bytes": 4096, "graph id": 1, "graph node id": 4294967299}
  },
  {"ph": "f", "id": 40, "pid": 0, "tid": 7, "ts": 327.000, "cat": "ac2g", "name": "ac2g", "bp": "e"}
]})J";
  auto m = ParseTrace(t, "cuda_graph.json");
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m->size(), 4u);
  for (size_t i = 1; i < 4; ++i) {
    EXPECT_TRUE(IsGpuKind(m->kind[i])) << i;
    EXPECT_EQ(m->launcher[i], 0) << i;
  }
  EXPECT_EQ(testutil::FindDiagnostic(m->diagnostics, "unpaired_flows"),
            nullptr);  // one start, three ends: all paired
}

TEST(TraceFormat, HardwareCounters) {
  // CUPTI PM sampling: one "C" event per metric and sample on a "GPU N Counters" track, the value
  // under an empty key. MTIA counters: one "C" event, a key per counter.
  const char* t = R"J({"schemaVersion": 1, "traceEvents": [
  {
    "ph": "C", "cat": "hardware_counters", "name": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "pid": "GPU 0 Counters", "tid": 0, "ts": 300.000,
    "args": {
      "": 41.5
    }
  },
  {
    "ph": "C", "cat": "hardware_counters", "name": "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "pid": "GPU 0 Counters", "tid": 0, "ts": 300.000,
    "args": {
      "": 12.25
    }
  },
  {
    "ph": "C", "cat": "mtia_counters", "name": "HBM", "pid": 0, "tid": 0, "ts": 300.000,
    "args": {
      "read_bw": 1.5, "write_bw": 0.5
    }
  },
  {
    "ph": "X", "cat": "kernel", "name": "void gemm_kernel()", "pid": 0, "tid": 7,
    "ts": 299.000, "dur": 10.000,
    "args": {"device": 0, "stream": 7, "correlation": 5}
  }
]})J";
  auto m = ParseTrace(t, "hardware_counters.json");
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m->size(), 1u);  // counters are not complete events
  EXPECT_EQ(m->kind[0], EventKind::kKernel);
  EXPECT_EQ(testutil::FindDiagnostic(m->diagnostics, "unknown_category"), nullptr);
  EXPECT_EQ(testutil::FindDiagnostic(m->diagnostics, "missing_fields"), nullptr);
}

TEST(TraceFormat, RocmHip) {
  // ROCm writes its HIP runtime calls as "cuda_runtime". Kernels: roctracer-era Kineto (removed
  // in kineto#1419) put the queue id in "stream", often 0; rocprofiler-sdk puts the HSA queue
  // handle (a pointer-sized number) in "stream" and tid.
  const char* t = R"J({"schemaVersion": 1, "traceEvents": [
  {
    "ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 4242, "tid": 4242,
    "ts": 10.000, "dur": 5.000,
    "args": {"External id": 1,"kernel": "void at::native::elementwise_kernel()", "cid": 3, "correlation": 7, "grid": [256, 1, 1], "block": [128, 1, 1], "shared memory": 0}
  },
  {
    "ph": "X", "cat": "kernel", "name": "void at::native::elementwise_kernel()", "pid": 0, "tid": 0,
    "ts": 20.001, "dur": 4.999,
    "args": {"External id": 1,"device": 0, "stream": 0, "correlation": 7, "kind": "Dispatch Kernel"}
  },
  {
    "ph": "X", "cat": "cuda_runtime", "name": "hipExtModuleLaunchKernel", "pid": 4242, "tid": 4242,
    "ts": 30.000, "dur": 5.000,
    "args": {"External id": 2,"kernel": "Cijk_Ailk_Bljk_SB_MT64x64x16", "cid": 41, "correlation": 8}
  },
  {
    "ph": "X", "cat": "kernel", "name": "Cijk_Ailk_Bljk_SB_MT64x64x16", "pid": 2, "tid": 140737353889792,
    "ts": 40.001, "dur": 9.999,
    "args": {"External id": 2,"device": 2, "stream": 140737353889792, "hsa_queue": 140737353889792, "correlation": 8, "kind": "KERNEL_DISPATCH", "grid": [4096, 1, 1], "block": [256, 1, 1]}
  }
]})J";
  auto m = ParseTrace(t, "rocm.json");
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m->size(), 4u);
  EXPECT_EQ(m->kind[0], EventKind::kRuntime);
  EXPECT_EQ(m->kind[2], EventKind::kRuntime);
  EXPECT_EQ(m->stream_of(1), 0);  // stream 0 is a stream, not "none"
  EXPECT_EQ(m->launcher[1], 0);
  EXPECT_EQ(m->stream_of(3), int64_t{140737353889792});
  EXPECT_EQ(m->device_of(3), 2);
  EXPECT_EQ(m->launcher[3], 2);
  EXPECT_EQ(testutil::FindDiagnostic(m->diagnostics, "unknown_category"), nullptr);
}

TEST(TraceFormat, FlowEvents) {
  // ac2g: "s" on the launch call, "f" with "bp": "e" on the GPU side, id = correlation. Older
  // Kineto wrote only the "f". "fwdbwd" links autograd's forward and backward ops.
  const char* t = R"J({"schemaVersion": 1, "traceEvents": [
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1.000, "dur": 1.000, "args": {"correlation": 1}},
  {"ph": "s", "id": 1, "pid": 1, "tid": 1, "ts": 1.000, "cat": "ac2g", "name": "ac2g"},
  {"ph": "X", "cat": "kernel", "name": "k1", "pid": 0, "tid": 7, "ts": 3.000, "dur": 1.000, "args": {"device": 0, "stream": 7, "correlation": 1}},
  {"ph": "f", "id": 1, "pid": 0, "tid": 7, "ts": 3.000, "cat": "ac2g", "name": "ac2g", "bp": "e"},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 5.000, "dur": 1.000, "args": {"correlation": 2}},
  {"ph": "X", "cat": "kernel", "name": "k2", "pid": 0, "tid": 7, "ts": 7.000, "dur": 1.000, "args": {"device": 0, "stream": 7, "correlation": 2}},
  {"ph": "f", "id": 2, "pid": 1, "tid": 1, "ts": 5.000, "cat": "ac2g", "name": "ac2g", "bp": "e"},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10.000, "dur": 1.000, "args": {"External id": 9, "Sequence number": 3}},
  {"ph": "s", "id": 3, "pid": 1, "tid": 1, "ts": 10.000, "cat": "fwdbwd", "name": "fwdbwd"},
  {"ph": "X", "cat": "cpu_op", "name": "MmBackward0", "pid": 1, "tid": 2, "ts": 20.000, "dur": 1.000, "args": {"External id": 10, "Sequence number": 3}},
  {"ph": "f", "id": 3, "pid": 1, "tid": 2, "ts": 20.000, "cat": "fwdbwd", "name": "fwdbwd", "bp": "e"},
  {"ph": "f", "id": 999, "pid": 0, "tid": 7, "ts": 30.000, "cat": "ac2g", "name": "ac2g", "bp": "e"}
]})J";
  auto m = ParseTrace(t, "flows.json");
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m->size(), 6u);
  EXPECT_EQ(m->launcher[1], 0);
  EXPECT_EQ(m->launcher[3], 2);
  const base::Diagnostic* d = testutil::FindDiagnostic(m->diagnostics, "unpaired_flows");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->count, 1);  // only id 999; fwdbwd flows are not CPU-to-GPU flows
}

// Launches and flows are matched by id whether the ids are a small counter or 10^12 apart (past
// 32 bits): the same links, the first of two calls sharing an id, and the same unpaired flows.
TEST(TraceFormat, LaunchesAndFlowsPairTheSameWithSmallOrFarApartIds) {
  auto parse = [](int64_t scale) {
    // A launch call, a kernel and a flow start ("s") or end ("f"), with id k * scale.
    auto call = [&](int ts, int64_t k) {
      return fmt::format(
          R"({{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", )"
          R"("pid": 1, "tid": 1, "ts": {}, "dur": 1, "args": {{"correlation": {}}}}})",
          ts, k * scale);
    };
    auto kernel = [&](const char* name, int ts, int64_t k) {
      return fmt::format(R"({{"ph": "X", "cat": "kernel", "name": "{}", "pid": 0, "tid": 7, )"
                         R"("ts": {}, "dur": 1, "args": {{"stream": 7, "correlation": {}}}}})",
                         name, ts, k * scale);
    };
    // As Kineto writes them: the start on the launching thread, the end on the kernel's stream
    // with "bp": "e".
    auto flow = [&](const char* ph, int ts, int64_t k) {
      const bool end = ph == std::string_view("f");
      return fmt::format(R"({{"ph": "{}", "id": {}, "pid": {}, "tid": {}, "ts": {}, )"
                         R"("cat": "ac2g", "name": "ac2g"{}}})",
                         ph, k * scale, end ? 0 : 1, end ? 7 : 1, ts, end ? R"(, "bp": "e")" : "");
    };
    const std::string t =
        R"({"traceEvents": [)" +
        fmt::format("{}", fmt::join(
                              std::vector<std::string>{
                                  call(1, 1), flow("s", 1, 1), call(2, 1), kernel("k1", 3, 1),
                                  flow("f", 3, 1), call(5, 2), kernel("k2", 7, 2), flow("f", 7, 2),
                                  kernel("k3", 9, 3), flow("f", 9, 4), flow("s", 9, 5),
                                  flow("s", 9, 5), kernel("k4", 11, 1), flow("f", 11, 2)},
                              ",\n")) +
        "]}";
    auto m = ParseTrace(t, "ids.json");
    if (m.ok()) return std::move(*m);
    ADD_FAILURE() << m.status().message();
    return TraceModel{};
  };
  for (int64_t scale : {int64_t{1}, int64_t{1'000'000'000'000}}) {
    SCOPED_TRACE(scale);
    const TraceModel m = parse(scale);
    ASSERT_EQ(m.size(), 7u);
    EXPECT_EQ(m.launcher[2], 0);   // k1: the first of the two calls with its id
    EXPECT_EQ(m.launcher[4], 3);   // k2
    EXPECT_EQ(m.launcher[5], -1);  // k3: no call has its id
    EXPECT_EQ(m.launcher[6], 0);   // k4: an id met again after a larger one
    EXPECT_EQ(m.launcher[0], -1);  // a call is launched by nothing
    // Id 2's two ends are excused by its call's and k2's correlation; id 4's end and id 5's two
    // starts are not.
    const base::Diagnostic* d = testutil::FindDiagnostic(m.diagnostics, "unpaired_flows");
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(d->count, 3);
    EXPECT_NE(d->message.find("e.g. id " + std::to_string(4 * scale)), std::string::npos)
        << d->message;
  }
}

TEST(TraceFormat, TraceSpanAndStringPids) {
  // The profiler's own span on pid "Spans", an iteration marker on pid "Traces", the closing
  // "Record Window End" instant with pid and tid "", overhead rows on pid -1.
  const char* t = R"J({"schemaVersion": 1, "traceEvents": [
  {
    "ph": "M", "name": "process_name", "ts": 0.000, "pid": -1, "tid": 0,
    "args": {"name": "CUPTI Overhead"}
  },
  {
    "ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 4242, "tid": 4242,
    "ts": 10.000, "dur": 20.000
  },
  {
    "ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": "PyTorch Profiler",
    "ts": 5.000, "dur": 100.000,
    "args": {
      "Op count": 0
    }
  },
  {
    "name": "process_sort_index", "ph": "M", "ts": 5.000, "pid": "Spans", "tid": 0,
    "args": {"sort_index": 536870912}
  },
  {
    "ph": "i", "s": "g", "name": "Iteration Start: PyTorch Profiler", "pid": "Traces", "tid": "Trace PyTorch Profiler",
    "ts": 5.000
  },
  {
    "ph": "i", "s": "g", "name": "Record Window End", "pid": "", "tid": "",
    "ts": 105.000
  }
], "traceName": "/tmp/libkineto_activities_4242.json"})J";
  auto m = ParseTrace(t, "spans.json");
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m->size(), 2u);
  const size_t s = IndexOf(*m, "PyTorch Profiler (0)");
  ASSERT_NE(s, kMissing);
  EXPECT_EQ(m->kind[s], EventKind::kSpan);
  EXPECT_GE(m->pid_of(s), TraceModel::kStringIdBase);
  EXPECT_EQ(m->stream_of(s), -1);
  EXPECT_EQ(testutil::FindDiagnostic(m->diagnostics, "missing_fields"), nullptr);
  EXPECT_EQ(testutil::FindDiagnostic(m->diagnostics, "unknown_category"), nullptr);
}

TEST(TraceFormat, OverheadEvents) {
  const char* t = R"J({"schemaVersion": 1, "traceEvents": [
  {
    "ph": "X", "cat": "overhead", "name": "Activity Buffer Request", "pid": -1, "tid": 0,
    "ts": 50.000, "dur": 120.000
  },
  {
    "ph": "X", "cat": "overhead", "name": "Instrumentation", "pid": -1, "tid": 0,
    "ts": 200.000, "dur": 3.000
  }
]})J";
  auto m = ParseTrace(t, "overhead.json");
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m->size(), 2u);
  EXPECT_EQ(m->kind[0], EventKind::kOther);
  EXPECT_EQ(m->pid_of(0), -1);
  EXPECT_EQ(m->stream_of(0), -1);
  EXPECT_EQ(testutil::FindDiagnostic(m->diagnostics, "unknown_category"), nullptr);
}

TEST(TraceFormat, OtherBackendsLinkLaunches) {
  // XPU (XPUPTI) and PrivateUse1 backends reuse "kernel" and "gpu_memcpy" for device work; only
  // the host side has its own category.
  const char* t = R"J({"schemaVersion": 1, "traceEvents": [
  {
    "ph": "X", "cat": "xpu_runtime", "name": "urEnqueueKernelLaunch", "pid": 4242, "tid": 4242,
    "ts": 10.000, "dur": 5.000,
    "args": {"External id": 1,"correlation": 11}
  },
  {
    "ph": "X", "cat": "kernel", "name": "gemm_kernel", "pid": 0, "tid": 1,
    "ts": 20.000, "dur": 5.000,
    "args": {"External id": 1,"device": 0, "stream": 1, "correlation": 11}
  },
  {
    "ph": "X", "cat": "privateuse1_runtime", "name": "launchKernel", "pid": 4242, "tid": 4242,
    "ts": 30.000, "dur": 5.000,
    "args": {"External id": 2,"correlation": 12}
  },
  {
    "ph": "X", "cat": "kernel", "name": "add_kernel", "pid": 0, "tid": 1,
    "ts": 40.000, "dur": 5.000,
    "args": {"External id": 2,"device": 0, "stream": 1, "correlation": 12}
  }
]})J";
  auto m = ParseTrace(t, "other_backends.json");
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m->size(), 4u);
  EXPECT_EQ(m->kind[0], EventKind::kRuntime);
  EXPECT_EQ(m->kind[2], EventKind::kRuntime);
  EXPECT_EQ(m->launcher[1], 0);
  EXPECT_EQ(m->launcher[3], 2);
  EXPECT_EQ(testutil::FindDiagnostic(m->diagnostics, "unknown_category"), nullptr);
}

TEST(TraceFormat, TodaysCategoriesAreKnown) {
  // Every category libkineto writes on a complete event (ActivityType.h's _activityTypeNames;
  // hardware_counters, mtia_counters and xpu_scope_profiler only on "C" events).
  const std::string cats =
      "cpu_op user_annotation gpu_user_annotation gpu_memcpy gpu_memset kernel cuda_runtime "
      "cuda_driver python_function overhead mtia_runtime mtia_ccp_events mtia_insight cuda_sync "
      "cuda_event glow_runtime cuda_profiler_range hpu_op xpu_runtime xpu_driver collective_comm "
      "privateuse1_runtime privateuse1_driver xpu_sync Trace";
  std::string t = "{\"schemaVersion\": 1, \"traceEvents\": [\n";
  std::istringstream in(cats);
  size_t n = 0;
  for (std::string c; in >> c;) {
    if (n++ > 0) t += ",\n";
    t += "{\"ph\": \"X\", \"cat\": \"" + c + "\", \"name\": \"e_" + c +
         "\", \"pid\": 0, \"tid\": 1, \"ts\": " + std::to_string(n) + ".000, \"dur\": 0.500}";
  }
  t += "\n]}";
  auto m = ParseTrace(t, "categories.json");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->size(), n);
  const base::Diagnostic* d = testutil::FindDiagnostic(m->diagnostics, "unknown_category");
  EXPECT_EQ(d, nullptr) << (d ? d->message : std::string());
}

TEST(TraceFormat, MtiaDeviceEventsAreKernelsLaunchedByRunFunction) {
  // An MTIA trace: its runtime's runFunction launches a kernel of mtia_ccp_events on stream 102
  // (linked by correlation, as HTA links them); a DMA request with no stream is on no queue.
  const char* t = R"J({"schemaVersion": 1, "traceEvents": [
  {"ph": "X", "cat": "mtia_runtime", "name": "runFunction - job_prep_and_submit_for_execution",
   "pid": 31, "tid": 31, "ts": 10.000, "dur": 5.000, "args": {"correlation": 18}},
  {"ph": "X", "cat": "mtia_ccp_events", "name": "add-dtype_Float", "pid": 9, "tid": 408,
   "ts": 20.000, "dur": 3.000, "args": {"correlation": 18, "stream": 102}},
  {"ph": "X", "cat": "mtia_ccp_events", "name": "dma_request", "pid": 9, "tid": 801,
   "ts": 30.000, "dur": 1.000, "args": {"direction": "DEVICE_TO_HOST", "size": 16}}
]})J";
  auto m = ParseTrace(t, "mtia.json");
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m->size(), 3u);
  EXPECT_EQ(m->kind[0], EventKind::kRuntime);
  EXPECT_EQ(m->kind[1], EventKind::kKernel);
  EXPECT_EQ(m->launcher[1], 0);
  EXPECT_EQ(m->kind[2], EventKind::kOther);
}

TEST(TraceFormat, CpuOpStreamKwarg) {
  // torch/_inductor's CachingAutotuner records each Triton launch with kwargs kernel_file,
  // kernel_hash, kernel_backend, stream (the raw stream handle, 0 = default stream), num_warps...
  const char* t = R"J({"schemaVersion": 1, "traceEvents": [
  {
    "ph": "X", "cat": "cpu_op", "name": "triton_poi_fused_add_0", "pid": 4242, "tid": 4242,
    "ts": 10.000, "dur": 20.000,
    "args": {
      "External id": 30,"Record function id": 0, "Input Dims": [[1024], [1024], [1024], []],
      "Input type": ["float", "float", "float", "Scalar"], "kernel_file": "/tmp/torchinductor_u/ab/cab12.py",
      "kernel_hash": "4f0c", "kernel_backend": "triton", "stream": 0, "num_warps": 4, "num_stages": 1,
      "kernel_kwargs": "XBLOCK=1024", "kernel_name": "triton_poi_fused_add_0"
    }
  },
  {
    "ph": "X", "cat": "cuda_driver", "name": "cuLaunchKernel", "pid": 4242, "tid": 4242,
    "ts": 12.000, "dur": 6.000,
    "args": {"External id": 30,"cbid": 307, "correlation": 30}
  },
  {
    "ph": "X", "cat": "kernel", "name": "triton_poi_fused_add_0", "pid": 0, "tid": 7,
    "ts": 20.000, "dur": 3.000,
    "args": {"External id": 30,"device": 0, "stream": 7, "correlation": 30}
  }
]})J";
  auto m = ParseTrace(t, "inductor.json");
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m->size(), 3u);
  const size_t op = IndexOf(*m, "triton_poi_fused_add_0", EventKind::kCpuOp);
  const size_t k = IndexOf(*m, "triton_poi_fused_add_0", EventKind::kKernel);
  ASSERT_NE(op, kMissing);
  ASSERT_NE(k, kMissing);
  EXPECT_EQ(m->stream_of(op), -1) << "a kwarg of a CPU op is not a GPU stream";
  EXPECT_EQ(m->device_of(op), -1);
  EXPECT_EQ(m->stream_of(k), 7);
  EXPECT_EQ(m->launcher[k], 1);
}

}  // namespace
}  // namespace trainprof::trace

namespace trainprof::trace {
namespace {

// Kineto since 2024: ts are µs after baseTimeNanoseconds, which may come before or after the
// events (re-saved files). The model holds Unix-epoch ns either way.
TEST(TraceFormat, BaseTimeNanoseconds) {
  const std::string events = R"J("traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1500.250, "dur": 2},
  {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": 1501,
   "args": {"Device Id": 0, "Bytes": 512}}])J";
  for (bool before : {true, false}) {
    std::string text = before ? R"J({"baseTimeNanoseconds": 1735632360000000000, )J" + events + "}"
                              : "{" + events + R"J(, "baseTimeNanoseconds": 1735632360000000000})J";
    auto m = ParseTrace(text, "base.json");
    ASSERT_TRUE(m.ok()) << m.status().message();
    ASSERT_EQ(m->size(), 1u);
    EXPECT_EQ(m->base_time_ns, 1735632360000000000);
    EXPECT_EQ(m->ts_ns[0], 1735632360000000000 + 1500250) << (before ? "before" : "after");
  }
  auto old = ParseTrace("{" + events + "}", "old.json");  // before 2024: µs since the epoch
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->base_time_ns, 0);
  EXPECT_EQ(old->ts_ns[0], 1500250);
  auto bad = ParseTrace(R"J({"baseTimeNanoseconds": "soon", )J" + events + "}", "bad.json");
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ(bad->ts_ns[0], 1500250);
  EXPECT_NE(testutil::FindDiagnostic(bad->diagnostics, "bad_metadata"), nullptr);
}

// Names with bytes that are not UTF-8, and raw tabs (Kineto escapes only '\n' and '"').
TEST(TraceFormat, InvalidUtf8AndControlCharactersInStrings) {
  std::string text =
      "{\"traceEvents\": [\n"
      "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"step\t1\", \"pid\": 1, "
      "\"tid\": 1, \"ts\": 1, \"dur\": 1, \"args\": {\"Call stack\": \"a.py\tb\"}},\n"
      "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"bad\xff\xfe name\", "
      "\"pid\": 1, \"tid\": 1, \"ts\": 2, \"dur\": 1},\n"
      "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"k\xc3\xa9rnel \xe2\x82\xac\","
      " \"pid\": 1, \"tid\": 1, \"ts\": 3, \"dur\": 1},\n"
      "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"cut \xe2\x82\", \"pid\": 1, "
      "\"tid\": 1, \"ts\": 4, \"dur\": 1}]}";
  auto m = ParseTrace(text, "strings.json");
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m->size(), 4u);
  EXPECT_EQ(m->name_of(0), "step\t1");
  EXPECT_EQ(m->name_of(1), "bad\xef\xbf\xbd\xef\xbf\xbd name");
  EXPECT_EQ(m->name_of(2), "k\xc3\xa9rnel \xe2\x82\xac");  // well-formed UTF-8 is kept
  EXPECT_EQ(m->name_of(3), "cut \xef\xbf\xbd\xef\xbf\xbd");
  for (size_t i = 0; i < m->size(); ++i) EXPECT_TRUE(IsValidUtf8(m->name_of(i))) << i;
  const base::Diagnostic* control = testutil::FindDiagnostic(m->diagnostics, "control_character");
  ASSERT_NE(control, nullptr);
  EXPECT_EQ(control->count, 2);  // the name and the call stack
  EXPECT_EQ(control->severity(), base::DataSeverity::kInfo);
  const base::Diagnostic* utf8 = testutil::FindDiagnostic(m->diagnostics, "invalid_utf8");
  ASSERT_NE(utf8, nullptr);
  EXPECT_EQ(utf8->count, 2);
  // Through a 64-byte window each event is scanned again after a refill: counted once still.
  std::string path = testutil::FreshTempDir() + "/strings.json";
  std::ofstream(path, std::ios::binary) << text;
  ReadOptions small;
  small.chunk_bytes = 64;
  auto again = ReadTraceFile(path, small);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->name_of(1), m->name_of(1));
  ASSERT_NE(testutil::FindDiagnostic(again->diagnostics, "control_character"), nullptr);
  EXPECT_EQ(testutil::FindDiagnostic(again->diagnostics, "control_character")->count, 2);
  EXPECT_EQ(testutil::FindDiagnostic(again->diagnostics, "invalid_utf8")->count, 2);
  auto clean = ParseTrace(R"J({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a",
    "pid": 1, "tid": 1, "ts": 1, "dur": 1}]})J",
                          "clean.json");
  ASSERT_TRUE(clean.ok());
  EXPECT_EQ(testutil::FindDiagnostic(clean->diagnostics, "control_character"), nullptr);
  EXPECT_EQ(testutil::FindDiagnostic(clean->diagnostics, "invalid_utf8"), nullptr);
}

// Kineto of 2021 printed non-finite doubles bare: "memory bandwidth (GB/s)": inf.
TEST(TraceFormat, BareNonFiniteNumbers) {
  auto m = ParseTrace(R"J({"traceEvents": [
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoD", "pid": 0, "tid": 7, "ts": 10, "dur": 0,
   "args": {"stream": 7, "device": 0, "memory bandwidth (GB/s)": inf, "x": -inf, "y": nan, "z": -nan}},
  {"ph": "X", "cat": "cpu_op", "name": "nan time", "pid": 1, "tid": 1, "ts": nan, "dur": 1},
  {"ph": "X", "cat": "cpu_op", "name": "inf time", "pid": 1, "tid": 1, "ts": 1, "dur": inf}]})J",
                      "inf.json");
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m->size(), 1u);
  EXPECT_EQ(m->name_of(0), "Memcpy DtoD");
  const base::Diagnostic* bad = testutil::FindDiagnostic(m->diagnostics, "bad_time");
  ASSERT_NE(bad, nullptr);
  EXPECT_EQ(bad->count, 2);
  EXPECT_FALSE(ParseTrace(R"J({"traceEvents": [], "x": infinite})J", "x.json").ok());
}

// CUPTI's range profiler: counters per range, made-up times, often no kernels at all.
TEST(TraceFormat, CuptiProfilerRange) {
  auto m = ParseTrace(R"J({"traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
  {"ph": "X", "cat": "cuda_profiler_range", "name": "ampere_sgemm_128x64_nn", "pid": 0, "tid": 0,
   "ts": 0, "dur": 50, "args": {"correlation": 5, "sm__inst_executed_pipe_tensor.sum": 0}},
  {"ph": "X", "cat": "cuda_profiler_range", "name": "ampere_sgemm_64x64_nn", "pid": 0, "tid": 0,
   "ts": 50, "dur": 50, "args": {"correlation": 6}}]})J",
                      "range.json");
  ASSERT_TRUE(m.ok()) << m.status().message();
  const base::Diagnostic* d = testutil::FindDiagnostic(m->diagnostics, "profiler_range");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->count, 2);
  EXPECT_NE(d->message.find("no GPU timeline"), std::string::npos);
  EXPECT_EQ(testutil::FindDiagnostic(m->diagnostics, "unknown_category"), nullptr);
  size_t r = IndexOf(*m, "ampere_sgemm_128x64_nn");
  ASSERT_NE(r, kMissing);
  EXPECT_EQ(m->kind[r], EventKind::kOther);  // not GPU work: its times are not real
}

// A peer-to-peer copy names fromDevice / inDevice / toDevice, not "device"; an old trace names
// no device at all, and its pid is the GPU.
TEST(TraceFormat, MemcpyPeerToPeerDevice) {
  auto m = ParseTrace(R"J({"traceEvents": [
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy PtoP (Device -> Device)", "pid": 1, "tid": 20,
   "ts": 10, "dur": 5, "args": {"fromDevice": 0, "inDevice": 1, "toDevice": 1, "stream": 20,
   "correlation": 50}},
  {"ph": "X", "cat": "Kernel", "name": "old_kernel", "pid": 3, "tid": "stream 7", "ts": 20,
   "dur": 5}]})J",
                      "p2p.json");
  ASSERT_TRUE(m.ok()) << m.status().message();
  size_t p2p = IndexOf(*m, "Memcpy PtoP (Device -> Device)");
  size_t old = IndexOf(*m, "old_kernel");
  ASSERT_NE(p2p, kMissing);
  ASSERT_NE(old, kMissing);
  EXPECT_EQ(m->device_of(p2p), 1);
  EXPECT_EQ(m->stream_of(p2p), 20);
  EXPECT_EQ(m->device_of(old), 3);
  EXPECT_EQ(m->stream_of(old), 7);
}

}  // namespace
}  // namespace trainprof::trace
