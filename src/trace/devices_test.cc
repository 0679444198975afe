#include "trace/devices.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "trace/kineto/kineto_reader.h"

namespace trainprof::trace {
namespace {

// A ROCm or CUDA trace with `props` as deviceProperties, one kernel on `kernel_device`, and a
// [memory] event on `memory_device` (none when < 0).
std::string Trace(const std::string& runtime_key, const std::string& props, int kernel_device,
                  int memory_device) {
  std::string memory;
  if (memory_device >= 0)
    memory = fmt::format(
        R"J(,{{"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": 5, "s": "t",
           "args": {{"Device Type": 6, "Device Id": {}, "Addr": 1, "Bytes": 512,
                    "Total Allocated": 512, "Total Reserved": 2048}}}})J",
        memory_device);
  return fmt::format(R"J({{"{}": 60000000, "deviceProperties": [{}], "traceEvents": [
      {{"ph": "X", "cat": "kernel", "name": "Cijk_Alik_Bljk_MT64x64x64_MI16x16x1", "pid": 0,
        "tid": 7, "ts": 10, "dur": 5, "args": {{"device": {}, "stream": 7}}}}{}]}})J",
                     runtime_key, props, kernel_device, memory);
}

std::string Prop(int id, const std::string& name, int major = 9, int minor = 4, int cus = 304) {
  return fmt::format(
      R"J({{"id": {}, "name": "{}", "totalGlobalMem": 206141652992, "computeMajor": {},
          "computeMinor": {}, "numSms": {}}})J",
      id, name, major, minor, cus);
}

TraceModel Read(const std::string& json) {
  auto m = ParseTrace(json, "t.json");
  EXPECT_TRUE(m.ok()) << m.status().message();
  return std::move(*m);
}

bool Says(const TraceModel& m, std::string_view diagnostic) {
  return std::ranges::any_of(m.diagnostics, [&](const auto& d) { return d.name() == diagnostic; });
}

int64_t KernelDevice(const TraceModel& m) {
  for (size_t i = 0; i < m.size(); ++i)
    if (m.kind[i] == EventKind::kKernel) return m.device_of(i);
  return -1;
}

// MI300X traces from TraceLens's test data: kernels on device 2 (two CPU agents first), memory
// events and deviceProperties on 0.
TEST(Devices, RocmKernelIdsMapToTheMemoryEventsDevice) {
  TraceModel m = Read(Trace("hip_runtime_version", Prop(0, "AMD Instinct MI300X VF"), 2, 0));
  EXPECT_EQ(KernelDevice(m), 0);
  EXPECT_TRUE(Says(m, "device_ids_mapped"));
  ASSERT_NE(m.FindDevice(0), nullptr);
  EXPECT_EQ(m.FindDevice(0)->vendor, "AMD");
  EXPECT_EQ(m.FindDevice(0)->arch, "gfx942");
}

// SGLang's decode: one visible GPU, kernels on device 9, no memory events.
TEST(Devices, RocmLoneDevicePropertyTakesTheKernels) {
  TraceModel m = Read(Trace("roctracer_version", Prop(0, "AMD Instinct MI300X"), 9, -1));
  EXPECT_EQ(KernelDevice(m), 0);
  EXPECT_TRUE(Says(m, "device_ids_mapped"));
}

// Eight GPUs listed and kernels on 2 with no memory events: GPU 2, or GPU 0 behind two CPU
// agents; it cannot be told, and the report says so.
TEST(Devices, RocmAmbiguousIdsAreSaid) {
  std::string props;
  for (int i = 0; i < 8; ++i) props += (i ? ", " : "") + Prop(i, "");
  TraceModel m = Read(Trace("hip_runtime_version", props, 2, -1));
  EXPECT_EQ(KernelDevice(m), 2);
  EXPECT_TRUE(Says(m, "device_ids_unchecked"));
  EXPECT_FALSE(Says(m, "device_ids_mapped"));
  // vLLM leaves the names empty: told by gfx94x, 304 compute units and 192 GiB.
  EXPECT_EQ(m.FindDevice(2)->name, "AMD Instinct MI300X");
  EXPECT_TRUE(Says(m, "device_name_inferred"));
}

TEST(Devices, UnknownIdsWithSeveralDevicesAreLeftAndSaid) {
  TraceModel m = Read(Trace("cuda_runtime_version",
                            Prop(0, "NVIDIA H100 80GB HBM3", 9, 0, 132) + ", " +
                                Prop(1, "NVIDIA H100 80GB HBM3", 9, 0, 132),
                            5, -1));
  EXPECT_EQ(KernelDevice(m), 5);
  EXPECT_TRUE(Says(m, "device_ids_unmapped"));
  EXPECT_EQ(m.FindDevice(0)->arch, "sm_90");
  EXPECT_EQ(m.FindDevice(0)->vendor, "NVIDIA");
}

TEST(Devices, CudaIdsThatMatchAreLeftAlone) {
  TraceModel m =
      Read(Trace("cuda_runtime_version", Prop(0, "NVIDIA A100-SXM4-80GB", 8, 0, 108), 0, 0));
  EXPECT_EQ(KernelDevice(m), 0);
  EXPECT_FALSE(Says(m, "device_ids_mapped"));
  EXPECT_FALSE(Says(m, "device_ids_unmapped"));
}

TEST(Devices, ArchitecturesByName) {
  DeviceInfo d{
      .name = "AMD Instinct MI210", .compute_major = 9, .compute_minor = 0, .vendor = "AMD"};
  EXPECT_EQ(ArchOf(d), "gfx90a");
  d.name = "AMD Instinct MI355X";
  EXPECT_EQ(ArchOf(d), "gfx950");
  d.name = "AMD Radeon Graphics";  // not in the table: the HIP compute version
  EXPECT_EQ(ArchOf(d), "gfx90x");
  EXPECT_EQ(InferAmdName({.total_memory_bytes = int64_t{256} << 30,
                          .compute_major = 9,
                          .compute_minor = 4,
                          .num_sms = 304}),
            "AMD Instinct MI325X");
  EXPECT_EQ(InferAmdName({.compute_major = 9, .compute_minor = 0, .num_sms = 104}), "");
}

}  // namespace
}  // namespace trainprof::trace
