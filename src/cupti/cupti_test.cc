#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>

#include "analysis/key_averages.h"
#include "cupti/cupti_collector.h"
#include "cupti/cupti_records.h"
#include "trace/inprocess/inprocess_reader.h"

namespace trainprof::cupti {
namespace {

std::string FakeApiName(bool driver, uint32_t cbid) {
  return driver ? "cuLaunchKernel" : cbid == 211 ? "cudaLaunchKernel" : "cudaMemcpyAsync";
}

template <typename T>
T Record(CUpti_ActivityKind kind) {
  T r{};
  r.kind = kind;
  return r;
}

void Append(const auto& record, RecordSink& sink) {
  AppendRecord(reinterpret_cast<const CUpti_Activity&>(record), sink, &FakeApiName);
}

// Records as CUPTI hands them over for one operator call (external id 9) that launched a GEMM
// and copied 4 MiB to the device, plus one record kind trainprof does not read.
RecordSink RecordedCall() {
  RecordSink sink;
  auto launch = Record<CUpti_ActivityAPI>(CUPTI_ACTIVITY_KIND_RUNTIME);
  launch.cbid = 211, launch.start = 1'000'100, launch.end = 1'000'200, launch.threadId = 77;
  launch.correlationId = 5;
  Append(launch, sink);
  auto copy_call = launch;
  copy_call.cbid = 51, copy_call.correlationId = 6, copy_call.start = 1'000'300;
  copy_call.end = 1'000'400;
  Append(copy_call, sink);
  auto k = Record<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  k.name = "ampere_sgemm_128x64_tn";
  k.start = 1'002'000, k.end = 1'005'000, k.deviceId = 0, k.contextId = 1, k.streamId = 7;
  k.correlationId = 5, k.gridX = 216, k.gridY = 1, k.gridZ = 1, k.blockX = 256, k.blockY = 1;
  k.blockZ = 1, k.registersPerThread = 96, k.staticSharedMemory = 16384;
  k.dynamicSharedMemory = 32768;
  Append(k, sink);
  auto m = Record<CUpti_ActivityMemcpy6>(CUPTI_ACTIVITY_KIND_MEMCPY);
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, m.bytes = 4 << 20, m.start = 1'001'000;
  m.end = 1'001'500, m.streamId = 7, m.correlationId = 6;
  Append(m, sink);
  for (uint32_t corr : {5u, 6u}) {
    auto x = Record<CUpti_ActivityExternalCorrelation>(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
    x.externalKind = kExternalKind, x.externalId = 9, x.correlationId = corr;
    Append(x, sink);
  }
  auto other = Record<CUpti_ActivityExternalCorrelation>(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
  other.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;  // Kineto's, not ours
  other.externalId = 1234, other.correlationId = 5;
  Append(other, sink);
  auto overhead = Record<CUpti_ActivityOverhead3>(CUPTI_ACTIVITY_KIND_OVERHEAD);
  Append(overhead, sink);
  return sink;
}

TEST(CuptiRecords, KernelCopyAndCallsBecomeActivityData) {
  RecordSink sink = RecordedCall();
  EXPECT_EQ(sink.unknown_records, 1u);
  gpu::ActivityData d = sink.Take(/*t0_ns=*/1'000'000);
  ASSERT_EQ(d.device.size(), 2u);
  const gpu::DeviceActivity& copy = d.device[0];  // sorted by begin
  EXPECT_EQ(copy.kind, gpu::ActivityKind::kMemcpy);
  EXPECT_EQ(d.names[copy.name], "Memcpy HtoD");
  EXPECT_EQ(copy.bytes, 4 << 20);
  EXPECT_EQ(copy.begin_ns, 1'000);
  const gpu::DeviceActivity& k = d.device[1];
  EXPECT_EQ(d.names[k.name], "ampere_sgemm_128x64_tn");
  EXPECT_EQ(k.begin_ns, 2'000);
  EXPECT_EQ(k.end_ns, 5'000);
  EXPECT_EQ(k.stream, 7);
  EXPECT_EQ(k.grid[0], 216);
  EXPECT_EQ(k.block[0], 256);
  EXPECT_EQ(k.registers, 96);
  EXPECT_EQ(k.shared_bytes, 49152);
  ASSERT_EQ(d.api.size(), 2u);
  EXPECT_EQ(d.names[d.api[0].name], "cudaLaunchKernel");
  EXPECT_EQ(d.api[0].tid, 77);
  EXPECT_EQ(d.api[0].begin_ns, 100);
  ASSERT_EQ(d.external.size(), 2u) << "Kineto's own external ids are not trainprof's";
}

TEST(CuptiRecords, TheOperatorGetsItsKernelAndCopyTime) {
  gpu::ActivityData d = RecordedCall().Take(1'000'000);
  torchlib::OpData ops;
  torchlib::OpEvent call;
  call.id = 9, call.tid = 77, call.begin_ns = 0, call.dur_ns = 500;
  ops.ops.push_back(call);
  ops.names = {"aten::mm"};
  const trace::TraceModel m = trace::ReadInProcess({.label = "job", .ops = &ops, .gpu = &d});
  const std::vector<analysis::KeyAverage> rows =
      analysis::KeyAverages(m, analysis::BuildOpTree(m), false);
  ASSERT_EQ(rows[0].name, "aten::mm");  // then the runtime calls' rows
  EXPECT_EQ(rows[0].self_device_ns, 3'000 + 500);
}

// Without a driver the collector refuses to start, saying why; with one it starts and stops.
TEST(CuptiCollector, StartsWhereADriverIsAndSaysWhyNotElsewhere) {
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (driver != nullptr) {
    dlclose(driver);
    auto c = Collector::Start({});
    ASSERT_TRUE(c.ok()) << c.status().message();
    gpu::ActivityData d = (*c)->Stop(0);
    EXPECT_EQ(d.dropped, 0u);
    return;
  }
  auto c = Collector::Start({});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kNotFound);
  EXPECT_NE(c.status().message().find("no CUDA driver"), std::string::npos) << c.status().message();
  // A failed start leaves nothing running: a second try fails the same way, not as "busy".
  auto again = Collector::Start({});
  EXPECT_NE(again.status().message().find("no CUDA driver"), std::string::npos);
}

}  // namespace
}  // namespace trainprof::cupti
