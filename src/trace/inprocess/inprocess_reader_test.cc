// The C++ job's recording read as a model: each record where a Kineto trace of the same run
// puts it, on hand-made records.
#include "trace/inprocess/inprocess_reader.h"

#include <gtest/gtest.h>

namespace trainprof::trace {
namespace {

constexpr int64_t kBase = 1'700'000'000'000'000'000;

torchlib::OpEvent Call(uint32_t name, int64_t tid, int64_t begin, int64_t end, uint64_t id,
                       uint32_t shapes = 0) {
  torchlib::OpEvent e;
  e.name = name, e.tid = tid, e.begin_ns = begin, e.dur_ns = end - begin, e.id = id;
  e.shapes = shapes;
  return e;
}

// Thread 7 runs aten::linear [100, 900) around aten::addmm [200, 800), which launches one
// kernel through cudaLaunchKernel (correlation 5, external id 2), and allocates 4 KiB on
// cuda:0 which aten::linear frees; step 3 is [0, 1000).
struct Recording {
  torchlib::OpData ops;
  gpu::ActivityData gpu;
  InProcessRecording rec;
  Recording() {
    ops.names = {"aten::linear", "aten::addmm"};
    ops.shapes = {"", "[[8, 4], [4, 2]]"};
    ops.ops = {Call(0, 7, 100, 900, 1), Call(1, 7, 200, 800, 2, 1)};
    torchlib::MemEvent alloc{.t_ns = 300,
                             .ptr = 0x10,
                             .bytes = 4096,
                             .total_allocated = 4096,
                             .total_reserved = 1 << 20,
                             .device_type = 1,
                             .device_index = 0};
    alloc.op = 1, alloc.tid = 7;
    torchlib::MemEvent free = alloc;
    free.t_ns = 850, free.bytes = -4096, free.total_allocated = 0, free.op = 0;
    ops.mem = {alloc, free};
    gpu.names = {"cudaLaunchKernel", "gemm_kernel", "cudaStreamSynchronize"};
    gpu.api = {{.name = 0, .tid = 7, .begin_ns = 300, .end_ns = 350, .correlation = 5}};
    gpu::DeviceActivity k{.kind = gpu::ActivityKind::kKernel,
                          .name = 1,
                          .device = 0,
                          .stream = 7,
                          .begin_ns = 400,
                          .end_ns = 700,
                          .correlation = 5};
    k.grid[0] = 264, k.grid[1] = 1, k.grid[2] = 1;
    gpu::DeviceActivity sync{.kind = gpu::ActivityKind::kSync,
                             .name = 2,
                             .device = 0,
                             .stream = 7,
                             .begin_ns = 700,
                             .end_ns = 710};
    gpu.device = {k, sync};
    gpu.external = {{5, 2}};
    gpu.devices = {{.id = 0, .name = "NVIDIA H100 80GB HBM3", .major = 9, .sms = 132}};
    rec = {.label = "run/ (in process)",
           .base_time_ns = kBase,
           .pid = 42,
           .rank = 1,
           .world_size = 2,
           .ops = &ops,
           .gpu = &gpu,
           .steps = {{3, 0, 1000, 7}}};
  }
};

size_t Find(const TraceModel& m, std::string_view name) {
  for (size_t i = 0; i < m.size(); ++i)
    if (m.name_of(i) == name) return i;
  ADD_FAILURE() << name << " is not in the model";
  return 0;
}

TEST(InProcessReader, EachRecordIsWhereKinetoPutsIt) {
  Recording r;
  const TraceModel m = ReadInProcess(r.rec);
  ASSERT_EQ(m.size(), 5u);  // the step, two operators, the launch and the kernel; no sync
  const size_t step = Find(m, "ProfilerStep#3"), linear = Find(m, "aten::linear");
  const size_t addmm = Find(m, "aten::addmm"), launch = Find(m, "cudaLaunchKernel");
  const size_t kernel = Find(m, "gemm_kernel");
  EXPECT_EQ(m.kind[step], EventKind::kUserAnnotation);
  EXPECT_EQ(m.kind[linear], EventKind::kCpuOp);
  EXPECT_EQ(m.kind[launch], EventKind::kRuntime);
  EXPECT_EQ(m.kind[kernel], EventKind::kKernel);
  EXPECT_EQ(m.ts_ns[addmm], kBase + 200);
  EXPECT_EQ(m.dur_ns[addmm], 600);
  EXPECT_EQ(m.tid_of(addmm), 7);
  EXPECT_EQ(m.pid_of(addmm), 42);
  EXPECT_EQ(m.external_id[addmm], 2);
  EXPECT_EQ(m.external_id[kernel], 2);
  EXPECT_EQ(m.launcher[kernel], static_cast<int32_t>(launch));
  EXPECT_EQ(m.device_of(kernel), 0);
  EXPECT_EQ(m.stream_of(kernel), 7);
  ASSERT_NE(m.InputsOf(addmm), nullptr);
  EXPECT_EQ(m.names[m.InputsOf(addmm)->dims], "[[8, 4], [4, 2]]");
  EXPECT_EQ(m.InputsOf(linear), nullptr);
  EXPECT_FLOAT_EQ(m.blocks_per_sm_of(kernel), 2.0f);
  EXPECT_EQ(m.rank, 1);
  EXPECT_EQ(m.world_size, 2);
  EXPECT_EQ(m.source, "trainprof");
}

TEST(InProcessReader, AllocatorReportsAreMemoryEventsOnTheirThread) {
  Recording r;
  const TraceModel m = ReadInProcess(r.rec);
  ASSERT_EQ(m.memory_events.size(), 2u);
  const MemoryEvent& a = m.memory_events[0];
  EXPECT_EQ(a.ts_ns, kBase + 300);
  EXPECT_EQ(a.bytes, 4096);
  EXPECT_EQ(a.total_reserved, 1 << 20);
  EXPECT_EQ(a.addr, 0x10u);
  EXPECT_EQ(a.device_type, 1);
  EXPECT_EQ(a.device_id, 0);
  EXPECT_EQ(m.tracks[a.track].tid, 7);
  ASSERT_EQ(m.peak_allocated_bytes.size(), 1u);
  EXPECT_EQ(m.peak_allocated_bytes[0], std::make_pair(int64_t{0}, int64_t{4096}));
  ASSERT_EQ(m.devices.size(), 1u);
  EXPECT_EQ(m.devices[0].arch, "sm_90");
}

TEST(InProcessReader, WithoutARankTheLabelOrTheDefaultNamesIt) {
  Recording r;
  r.rec.rank = -1;
  r.rec.gpu = nullptr;
  const TraceModel m = ReadInProcess(r.rec);
  EXPECT_EQ(m.rank, 0);
  EXPECT_EQ(m.rank_source, "default");
  EXPECT_EQ(m.size(), 3u);  // the step and the two operators
  EXPECT_TRUE(m.devices.empty());
}

// Only the span asked for: [250, 880) keeps every call (each overlaps it), the launch, the kernel
// and both allocator reports; [820, 880) keeps aten::linear (to 900) and the free at 850 only.
TEST(InProcessReader, OnlyWhatOverlapsTheSpan) {
  Recording r;
  r.rec.from_ns = 250, r.rec.to_ns = 880;
  TraceModel m = ReadInProcess(r.rec);
  EXPECT_EQ(m.size(), 5u);  // the step, both operators, the launch and the kernel
  ASSERT_EQ(m.memory_events.size(), 2u);
  r.rec.from_ns = 820;
  m = ReadInProcess(r.rec);
  EXPECT_EQ(m.size(), 2u);  // the step and aten::linear
  Find(m, "aten::linear");
  ASSERT_EQ(m.memory_events.size(), 1u);
  EXPECT_EQ(m.memory_events[0].bytes, -4096);
}

// The GPU runs behind the host: a kernel goes with its launch. [250, 380) keeps the launch at
// 300 and so its kernel at [400, 700); [360, 880) drops the launch and so the kernel too.
TEST(InProcessReader, DeviceWorkGoesWithItsLaunch) {
  Recording r;
  r.rec.from_ns = 250, r.rec.to_ns = 380;
  TraceModel m = ReadInProcess(r.rec);
  Find(m, "cudaLaunchKernel");
  Find(m, "gemm_kernel");
  r.rec.from_ns = 360, r.rec.to_ns = 880;
  m = ReadInProcess(r.rec);
  EXPECT_EQ(m.size(), 3u);  // the step and the two operators
  for (size_t i = 0; i < m.size(); ++i) EXPECT_NE(m.name_of(i), "gemm_kernel");
}

}  // namespace
}  // namespace trainprof::trace
