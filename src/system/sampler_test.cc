#include "system/sampler.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <thread>

#include "system/source.h"
#include "system/system_report.h"
#include "util/diagnostics.h"
#include "util/golden.h"

namespace trainprof::system {
namespace {

namespace fs = std::filesystem;

// A copy of tests/fake_root in a fresh folder, so a test can move its counters on.
class FakeRoot {
 public:
  FakeRoot() : dir_(testutil::FreshTempDir() + "/root") {
    fs::copy(testutil::SourceDir() + "/tests/fake_root", dir_, fs::copy_options::recursive);
  }
  const std::string& dir() const { return dir_; }
  void Write(const std::string& rel, const std::string& text) const {
    std::ofstream(dir_ + rel) << text;
  }
  void Remove(const std::string& rel) const { fs::remove_all(dir_ + rel); }

  // The counters of the fake tree one second after its initial state.
  void Advance() const {
    Write("/proc/stat",
          "cpu  10100 500 3050 80800 1550 0 200 0 0 0\n"
          "cpu0 5080 250 1540 40380 750 0 100 0 0 0\n"
          "cpu1 5020 250 1510 40420 800 0 100 0 0 0\n");
    Write("/proc/self/stat",
          "4242 (train (main) job) S 1 4242 4242 0 -1 4194304 50000 0 10 0 1150 250 0 0 20 0 8 "
          "0 12345 4294967296 262144 18446744073709551615 1 1 0\n");
    Write("/proc/4300/stat",
          "4300 (pt_data_worker) S 4242 4242 4242 0 -1 4194368 1000 0 0 0 350 100 0 0 20 0 2 0 "
          "12400 1073741824 65536 18446744073709551615 1 1 0\n");
    Write("/proc/diskstats",
          "   7       0 loop0 10 0 9000 0 0 0 9000 0 0 0 0 0 0 0 0 0 0\n"
          "   8       0 sda 1000 0 202048 500 2000 0 404096 800 0 1000 1300 0 0 0 0 0 0\n"
          "   8       1 sda1 900 0 190000 400 1900 0 390000 700 0 900 1100 0 0 0 0 0 0\n");
    Write("/proc/net/dev",
          "Inter-|   Receive |  Transmit\n"
          " face |bytes    packets|bytes\n"
          "    lo: 10000000 100 0 0 0 0 0 0 10000000 100 0 0 0 0 0 0\n"
          "  eth0: 51000000 40000 0 0 0 0 0 0 20500000 30000 0 0 0 0 0 0\n");
    Write("/sys/class/powercap/intel-rapl:0/energy_uj", "150000000\n");
    Write("/sys/class/powercap/intel-rapl:0:0/energy_uj", "90000000\n");
    Write("/sys/class/powercap/intel-rapl:1/energy_uj", "230000000\n");
  }

 private:
  std::string dir_;
};

// An injected clock the test moves by hand.
struct FakeClock {
  int64_t ns = 1'000'000'000;
  std::function<int64_t()> Fn() {
    return [this] { return ns; };
  }
};

SamplerOptions Options(const FakeRoot& root, FakeClock& clock, std::string nvml = "") {
  SamplerOptions o;
  o.root = root.dir();
  o.nvml_library = std::move(nvml);
  o.rocm_smi_library = "";  // AMD GPUs: sampler_rocm_test.cc
  o.disk_path = root.dir();
  o.interval_s = 1.0;
  o.clock = clock.Fn();
  o.t0_ns = 1'000'000'000;
  return o;
}

double Value(const SystemData& d, const std::string& key, size_t row = 0) {
  const int c = d.Find(key);
  EXPECT_GE(c, 0) << "no column " << key;
  return c < 0 ? std::nan("") : d.At(row, static_cast<size_t>(c));
}

// Baseline, then one sample a second later with the counters moved on.
SystemData TwoSamples(const FakeRoot& root, SamplerOptions o, FakeClock& clock) {
  auto s = SystemSampler::Create(std::move(o));
  s->SampleOnce();
  root.Advance();
  clock.ns += 1'000'000'000;
  s->SampleOnce();
  return s->TakeData();
}

TEST(SystemSampler, HostFiguresFromTheFakeRoot) {
  FakeRoot root;
  FakeClock clock;
  SystemData d = TwoSamples(root, Options(root, clock), clock);
  ASSERT_EQ(d.t_ns.size(), 1u) << "the baseline is not a sample";
  EXPECT_EQ(d.t_ns[0], 1'000'000'000);

  EXPECT_DOUBLE_EQ(Value(d, "cpu_utilization_percent"), 15.0);  // 150 busy of 1000 jiffies
  EXPECT_DOUBLE_EQ(Value(d, "cpu0_utilization_percent"), 24.0);
  EXPECT_DOUBLE_EQ(Value(d, "cpu1_utilization_percent"), 6.0);  // iowait counts as idle
  EXPECT_DOUBLE_EQ(Value(d, "load_average_1m"), 1.5);

  EXPECT_DOUBLE_EQ(Value(d, "system_memory_used_bytes"), (16384000.0 - 12288000.0) * 1024);
  EXPECT_DOUBLE_EQ(Value(d, "system_memory_used_percent"), 25.0);
  EXPECT_DOUBLE_EQ(Value(d, "swap_used_bytes"), 1024.0 * 1024 * 1024);

  // The process and its data-loader worker together.
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  const double tck = static_cast<double>(sysconf(_SC_CLK_TCK));
  EXPECT_DOUBLE_EQ(Value(d, "process_cpu_percent"), 100.0 * 250 / tck);  // 200 + 50 jiffies
  EXPECT_DOUBLE_EQ(Value(d, "process_rss_bytes"), (262144.0 + 65536.0) * page);
  EXPECT_DOUBLE_EQ(Value(d, "process_vms_bytes"), 4294967296.0 + 1073741824.0);
  EXPECT_DOUBLE_EQ(Value(d, "process_memory_percent"),
                   100.0 * (262144.0 + 65536.0) * page / (16384000.0 * 1024));
  EXPECT_DOUBLE_EQ(Value(d, "process_threads"), 10);
  EXPECT_DOUBLE_EQ(Value(d, "process_open_files"), 6);
  EXPECT_DOUBLE_EQ(Value(d, "process_count"), 2);

  // sda only: its partition sda1 and loop0 have no sys/block/<name>/device.
  EXPECT_DOUBLE_EQ(Value(d, "disk_read_bytes_per_s"), 2048.0 * 512);
  EXPECT_DOUBLE_EQ(Value(d, "disk_write_bytes_per_s"), 4096.0 * 512);
  EXPECT_GT(Value(d, "disk_used_bytes") + Value(d, "disk_available_bytes"), 0);

  // lo is left out of the totals, but has its own rate.
  EXPECT_DOUBLE_EQ(Value(d, "network_receive_bytes_per_s"), 1e6);
  EXPECT_DOUBLE_EQ(Value(d, "network_transmit_bytes_per_s"), 5e5);
  EXPECT_DOUBLE_EQ(Value(d, "network_received_bytes"), 1e6);
  EXPECT_DOUBLE_EQ(Value(d, "net_lo_receive_bytes_per_s"), 9e6);

  // RAPL: both packages (50 J + 30 J), not the core sub-zone inside package 0.
  EXPECT_DOUBLE_EQ(Value(d, "cpu_power_w"), 80.0);
  EXPECT_DOUBLE_EQ(Value(d, "cpu_energy_j"), 80.0);
  ASSERT_EQ(d.energy.size(), 1u);
  EXPECT_EQ(d.energy[0].device, "CPU (package-0 + package-1)");
  EXPECT_DOUBLE_EQ(d.energy[0].joules, 80.0);

  EXPECT_TRUE(d.diagnostics.empty()) << d.diagnostics[0].message;
  ASSERT_EQ(d.notes.size(), 2u);
  EXPECT_EQ(d.notes[0],
            "GPU: NVML is switched off (no library given); GPU figures are not sampled");
  EXPECT_EQ(d.notes[1],
            "AMD GPU: ROCm SMI is switched off (no library given); AMD GPU figures are not "
            "sampled");
}

TEST(SystemSampler, RaplCounterWrapsAround) {
  FakeRoot root;
  FakeClock clock;
  root.Write("/sys/class/powercap/intel-rapl:0/energy_uj", "262143000000\n");
  root.Remove("/sys/class/powercap/intel-rapl:1");
  auto s = SystemSampler::Create(Options(root, clock));
  s->SampleOnce();
  // 328850 µJ to the wrap point, then 671150 µJ: 1 J in all.
  root.Write("/sys/class/powercap/intel-rapl:0/energy_uj", "671150\n");
  clock.ns += 500'000'000;
  s->SampleOnce();
  SystemData d = s->TakeData();
  EXPECT_NEAR(Value(d, "cpu_power_w"), 2.0, 1e-9);
  EXPECT_NEAR(d.energy[0].joules, 1.0, 1e-9);
  EXPECT_EQ(testutil::FindDiagnostic(d.diagnostics, "system_counter_backwards"), nullptr);
}

TEST(SystemSampler, AmdEnergyDriverWhenThereIsNoRapl) {
  FakeRoot root;
  FakeClock clock;
  root.Remove("/sys/class/powercap");
  fs::create_directories(root.dir() + "/sys/class/hwmon/hwmon3");
  root.Write("/sys/class/hwmon/hwmon3/name", "amd_energy\n");
  root.Write("/sys/class/hwmon/hwmon3/energy1_label", "Ecore000\n");
  root.Write("/sys/class/hwmon/hwmon3/energy1_input", "5000000\n");
  root.Write("/sys/class/hwmon/hwmon3/energy17_label", "Esocket0\n");
  root.Write("/sys/class/hwmon/hwmon3/energy17_input", "90000000\n");
  auto s = SystemSampler::Create(Options(root, clock));
  s->SampleOnce();
  root.Write("/sys/class/hwmon/hwmon3/energy1_input", "9000000\n");
  root.Write("/sys/class/hwmon/hwmon3/energy17_input", "210000000\n");
  clock.ns += 2'000'000'000;
  s->SampleOnce();
  SystemData d = s->TakeData();
  ASSERT_EQ(d.energy.size(), 1u);
  EXPECT_EQ(d.energy[0].device, "CPU (Esocket0)");
  EXPECT_DOUBLE_EQ(d.energy[0].joules, 120.0);  // the socket counter; the core one is inside it
  EXPECT_DOUBLE_EQ(Value(d, "cpu_power_w"), 60.0);
}

TEST(SystemSampler, NoCpuEnergyCountersIsSaidInOneLine) {
  FakeRoot root;
  FakeClock clock;
  root.Remove("/sys/class/powercap");
  auto s = SystemSampler::Create(Options(root, clock));
  SystemData d = s->TakeData();
  EXPECT_EQ(d.Find("cpu_power_w"), -1);
  ASSERT_EQ(d.notes.size(), 3u);
  EXPECT_EQ(d.notes[2], "CPU energy: no RAPL or amd_energy counters under " + root.dir() +
                            "/sys/class (common in virtual machines); CPU energy is not measured");
}

TEST(SystemSampler, UnreadableRaplIsSaidNotGuessed) {
  FakeRoot root;
  FakeClock clock;
  // A folder where the counter should be: reading fails as a root-only file would for users.
  root.Remove("/sys/class/powercap/intel-rapl:0/energy_uj");
  fs::create_directories(root.dir() + "/sys/class/powercap/intel-rapl:0/energy_uj");
  auto s = SystemSampler::Create(Options(root, clock));
  SystemData d = s->TakeData();
  EXPECT_EQ(d.Find("cpu_energy_j"), -1);
  EXPECT_TRUE(d.energy.empty());
  ASSERT_EQ(d.notes.size(), 3u);
  EXPECT_EQ(d.notes[2], "CPU energy: " + root.dir() +
                            "/sys/class/powercap/intel-rapl:0/energy_uj is not readable (Is a "
                            "directory); CPU energy is not measured");
}

TEST(SystemSampler, MissingProcFileIsADiagnosticAndTheRestGoesOn) {
  FakeRoot root;
  FakeClock clock;
  root.Remove("/proc/net/dev");
  auto s = SystemSampler::Create(Options(root, clock));
  s->SampleOnce();
  root.Advance();
  root.Remove("/proc/net/dev");
  for (int i = 0; i < 2; ++i) {
    clock.ns += 1'000'000'000;
    s->SampleOnce();
  }
  SystemData d = s->TakeData();
  ASSERT_EQ(d.t_ns.size(), 2u);
  const report::Diagnostic* diag =
      testutil::FindDiagnostic(d.diagnostics, "system_source_unreadable");
  ASSERT_NE(diag, nullptr);
  EXPECT_EQ(diag->count, 1 + 3) << "discovery and every sample";
  EXPECT_EQ(diag->message, "cannot read " + root.dir() +
                               "/proc/net/dev: No such file or directory; its figures are "
                               "missing from those samples");
  EXPECT_EQ(d.Find("net_eth0_receive_bytes_per_s"), -1) << "no interface was found";
  EXPECT_TRUE(std::isnan(Value(d, "network_receive_bytes_per_s", 1)));
  EXPECT_DOUBLE_EQ(Value(d, "cpu_utilization_percent", 0), 15.0);
  EXPECT_DOUBLE_EQ(Value(d, "system_memory_used_percent", 1), 25.0);
}

TEST(SystemSampler, MalformedProcFileNamesFileAndLine) {
  FakeRoot root;
  FakeClock clock;
  auto s = SystemSampler::Create(Options(root, clock));
  s->SampleOnce();
  root.Advance();
  root.Write("/proc/meminfo", "MemTotal: 100 kB\nMemAvailable: many kB\n");
  clock.ns += 1'000'000'000;
  s->SampleOnce();
  SystemData d = s->TakeData();
  const report::Diagnostic* diag =
      testutil::FindDiagnostic(d.diagnostics, "system_source_malformed");
  ASSERT_NE(diag, nullptr);
  EXPECT_EQ(diag->message, root.dir() +
                               "/proc/meminfo: line 2: 'many' is not a size in kB; its figures "
                               "are missing from those samples");
  EXPECT_TRUE(std::isnan(Value(d, "system_memory_used_bytes")));
  EXPECT_DOUBLE_EQ(Value(d, "cpu_utilization_percent"), 15.0);
}

TEST(SystemSampler, CounterGoingBackwardsLeavesThatSampleOut) {
  FakeRoot root;
  FakeClock clock;
  auto s = SystemSampler::Create(Options(root, clock));
  root.Advance();
  s->SampleOnce();
  // Back to the initial (smaller) counters: a reset, not negative usage.
  fs::copy_file(testutil::SourceDir() + "/tests/fake_root/proc/stat", root.dir() + "/proc/stat",
                fs::copy_options::overwrite_existing);
  clock.ns += 1'000'000'000;
  s->SampleOnce();
  root.Advance();
  clock.ns += 1'000'000'000;
  s->SampleOnce();
  SystemData d = s->TakeData();
  ASSERT_EQ(d.t_ns.size(), 2u);
  EXPECT_TRUE(std::isnan(Value(d, "cpu_utilization_percent", 0)));
  EXPECT_DOUBLE_EQ(Value(d, "cpu_utilization_percent", 1), 15.0);
  const report::Diagnostic* diag =
      testutil::FindDiagnostic(d.diagnostics, "system_counter_backwards");
  ASSERT_NE(diag, nullptr);
  EXPECT_NE(diag->message.find("/proc/stat cpu went backwards"), std::string::npos)
      << diag->message;
}

// ---- GPUs through the fake NVML -------------------------------------------------------------

// Handle on the fake NVML the tests steer; the sampler dlopens the same file.
class FakeNvml {
 public:
  FakeNvml() : h_(dlopen(TRAINPROF_FAKE_NVML, RTLD_NOW | RTLD_LOCAL)) {
    EXPECT_NE(h_, nullptr) << dlerror();
  }
  ~FakeNvml() { dlclose(h_); }
  template <typename F>
  F* Fn(const char* name) {
    return reinterpret_cast<F*>(dlsym(h_, name));
  }
  void Reset(int devices) { Fn<void(int)>("fake_nvml_reset")(devices); }
  void Set(int dev, const char* figure, double v) {
    Fn<void(int, const char*, double)>("fake_nvml_set_value")(dev, figure, v);
  }
  void Error(int dev, const char* figure, int rc) {
    Fn<void(int, const char*, int)>("fake_nvml_set_error")(dev, figure, rc);
  }
  void InitError(int rc) { Fn<void(int)>("fake_nvml_set_init_error")(rc); }
  int PcieCalls() { return Fn<int()>("fake_nvml_pcie_calls")(); }
  void AddProcess(int dev, unsigned pid, double bytes, unsigned sm) {
    Fn<void(int, unsigned, double, unsigned)>("fake_nvml_add_process")(dev, pid, bytes, sm);
  }
  int Initialised() { return Fn<int()>("fake_nvml_initialised")(); }

  // Two 80 GB GPUs with a 700 W limit.
  void TwoGpus() {
    Reset(2);
    for (int g = 0; g < 2; ++g) {
      Set(g, "mem_total", 80e9);
      Set(g, "limit_mw", 700000);
      Set(g, "util", 90 - 40 * g);
      Set(g, "memutil", 30);
      Set(g, "mem_used", 20e9 * (g + 1));
      Set(g, "power_mw", 350000);
      Set(g, "temp", 60 + g);
      Set(g, "sm_clock", 1980);
      Set(g, "mem_clock", 2619);
      Set(g, "pcie_tx", 1000);
      Set(g, "pcie_rx", 2000);
      Set(g, "energy_mj", 1e6);
    }
  }

 private:
  void* h_;
};

TEST(SystemSampler, GpuFiguresPerDeviceAndAveraged) {
  FakeNvml nvml;
  nvml.TwoGpus();
  FakeRoot root;
  FakeClock clock;
  auto s = SystemSampler::Create(Options(root, clock, TRAINPROF_FAKE_NVML));
  s->SampleOnce();
  nvml.Set(0, "energy_mj", 1e6 + 700000);  // 700 J in 2 s on GPU 0
  nvml.Set(1, "energy_mj", 1e6 + 500000);
  clock.ns += 2'000'000'000;
  s->SampleOnce();
  SystemData d = s->TakeData();
  ASSERT_EQ(d.gpus.size(), 2u);
  EXPECT_EQ(d.gpus[1].name, "Fake GPU 80GB");
  EXPECT_DOUBLE_EQ(d.gpus[0].memory_total_bytes, 80e9);
  EXPECT_DOUBLE_EQ(d.gpus[0].power_limit_w, 700);
  EXPECT_DOUBLE_EQ(Value(d, "gpu0_utilization_percent"), 90);
  EXPECT_DOUBLE_EQ(Value(d, "gpu1_utilization_percent"), 50);
  EXPECT_DOUBLE_EQ(Value(d, "gpu1_memory_used_bytes"), 40e9);
  EXPECT_DOUBLE_EQ(Value(d, "gpu1_memory_used_percent"), 50);
  EXPECT_DOUBLE_EQ(Value(d, "gpu0_power_w"), 350);
  EXPECT_DOUBLE_EQ(Value(d, "gpu0_power_percent"), 50);
  EXPECT_DOUBLE_EQ(Value(d, "gpu1_temperature_c"), 61);
  EXPECT_DOUBLE_EQ(Value(d, "gpu0_sm_clock_mhz"), 1980);
  EXPECT_DOUBLE_EQ(Value(d, "gpu0_memory_clock_mhz"), 2619);
  EXPECT_DOUBLE_EQ(Value(d, "gpu0_pcie_rx_bytes_per_s"), 2e6);
  EXPECT_DOUBLE_EQ(Value(d, "gpu0_energy_j"), 700);
  EXPECT_DOUBLE_EQ(Value(d, "gpu_avg_utilization_percent"), 70);
  EXPECT_DOUBLE_EQ(Value(d, "gpu_avg_memory_used_bytes"), 30e9);
  ASSERT_EQ(d.energy.size(), 2u + 1u);  // CPU (RAPL) and two GPUs
  EXPECT_EQ(d.energy[1].device, "GPU 0: Fake GPU 80GB");
  EXPECT_EQ(d.energy[1].source, "NVML energy counter");
  EXPECT_DOUBLE_EQ(d.energy[2].joules, 500);
  EXPECT_TRUE(d.diagnostics.empty()) << d.diagnostics[0].message;
  s.reset();
  EXPECT_EQ(nvml.Initialised(), 0) << "nvmlShutdown was not called";
}

TEST(SystemSampler, GpuUseOfTheProcessTreeOnly) {
  FakeNvml nvml;
  nvml.TwoGpus();
  const auto self = static_cast<unsigned>(getpid());
  nvml.AddProcess(0, self, 3e9, 55);
  nvml.AddProcess(1, self, 1e9, 20);
  nvml.AddProcess(0, 4000000, 5e9, 90);  // another user's job on the same GPU
  FakeRoot root;
  FakeClock clock;
  SamplerOptions o = Options(root, clock, TRAINPROF_FAKE_NVML);
  o.per_process = true;
  auto s = SystemSampler::Create(o);
  s->SampleOnce();
  clock.ns += 1'000'000'000;
  s->SampleOnce();
  SystemData d = s->TakeData();
  EXPECT_DOUBLE_EQ(Value(d, "process_gpu_memory_bytes"), 4e9);
  EXPECT_DOUBLE_EQ(Value(d, "process_gpu_util_percent"), 75);
  const auto it = std::ranges::find(d.processes, static_cast<int64_t>(self), &ProcessStats::pid);
  ASSERT_NE(it, d.processes.end());
  EXPECT_DOUBLE_EQ(it->peak_gpu_memory_bytes, 4e9);
  EXPECT_DOUBLE_EQ(it->max_gpu_util_percent, 75);
  EXPECT_EQ(std::ranges::count(d.processes, int64_t{4000000}, &ProcessStats::pid), 0);
}

TEST(SystemSampler, GpuWithoutEnergyCounterIntegratesPower) {
  FakeNvml nvml;
  nvml.TwoGpus();
  nvml.Error(0, "energy", 3);  // not supported (pre-Volta)
  FakeRoot root;
  FakeClock clock;
  auto s = SystemSampler::Create(Options(root, clock, TRAINPROF_FAKE_NVML));
  s->SampleOnce();
  clock.ns += 2'000'000'000;
  nvml.Set(0, "power_mw", 450000);
  s->SampleOnce();
  SystemData d = s->TakeData();
  EXPECT_EQ(d.energy[1].source, "NVML power integrated over time");
  EXPECT_DOUBLE_EQ(d.energy[1].joules, (350.0 + 450.0) / 2 * 2);  // trapezoid over 2 s
  EXPECT_EQ(testutil::FindDiagnostic(d.diagnostics, "nvml_error"), nullptr)
      << "not supported is not an error";
}

TEST(SystemSampler, GpuLostMidRunStopsOnlyThatGpu) {
  FakeNvml nvml;
  nvml.TwoGpus();
  FakeRoot root;
  FakeClock clock;
  auto s = SystemSampler::Create(Options(root, clock, TRAINPROF_FAKE_NVML));
  s->SampleOnce();
  clock.ns += 1'000'000'000;
  s->SampleOnce();
  nvml.Error(1, "*", 15);  // NVML_ERROR_GPU_IS_LOST
  for (int i = 0; i < 3; ++i) {
    clock.ns += 1'000'000'000;
    s->SampleOnce();
  }
  SystemData d = s->TakeData();
  ASSERT_EQ(d.t_ns.size(), 4u);
  EXPECT_DOUBLE_EQ(Value(d, "gpu1_utilization_percent", 0), 50);
  EXPECT_TRUE(std::isnan(Value(d, "gpu1_utilization_percent", 3)));
  EXPECT_DOUBLE_EQ(Value(d, "gpu0_utilization_percent", 3), 90);
  EXPECT_DOUBLE_EQ(Value(d, "gpu_avg_utilization_percent", 3), 90) << "lost GPU left out";
  const report::Diagnostic* lost = testutil::FindDiagnostic(d.diagnostics, "gpu_lost");
  ASSERT_NE(lost, nullptr);
  EXPECT_EQ(lost->count, 1) << "said once, then the GPU is not asked again";
  EXPECT_EQ(lost->message,
            "GPU 1 fell off the bus during the run (NVML: GPU is lost); it is not sampled from "
            "then on");
}

TEST(SystemSampler, NvmlErrorsAreCountedPerFigure) {
  FakeNvml nvml;
  nvml.TwoGpus();
  nvml.Error(0, "temp", 999);
  nvml.Error(0, "clock", 3);
  FakeRoot root;
  FakeClock clock;
  auto s = SystemSampler::Create(Options(root, clock, TRAINPROF_FAKE_NVML));
  for (int i = 0; i < 3; ++i) {
    s->SampleOnce();
    clock.ns += 1'000'000'000;
  }
  SystemData d = s->TakeData();
  const report::Diagnostic* err = testutil::FindDiagnostic(d.diagnostics, "nvml_error");
  ASSERT_NE(err, nullptr);
  EXPECT_EQ(err->count, 3);
  EXPECT_EQ(err->severity(), base::DataSeverity::kDataLoss);
  EXPECT_EQ(err->message,
            "GPU 0: NVML failed to read the temperature: Unknown Error; those samples are missing");
  const report::Diagnostic* unsupported =
      testutil::FindDiagnostic(d.diagnostics, "gpu_figure_not_supported");
  ASSERT_NE(unsupported, nullptr);
  EXPECT_EQ(unsupported->severity(), base::DataSeverity::kInfo);
  EXPECT_EQ(unsupported->count, 1) << "asked once, then remembered";
  EXPECT_TRUE(std::isnan(Value(d, "gpu0_sm_clock_mhz", 1)));
  EXPECT_DOUBLE_EQ(Value(d, "gpu1_temperature_c", 1), 61);
  EXPECT_DOUBLE_EQ(Value(d, "gpu0_power_w", 1), 350);
}

TEST(SystemSampler, NoNvmlOrNoDriverIsOneLine) {
  FakeRoot root;
  FakeClock clock;
  {
    auto s = SystemSampler::Create(Options(root, clock, "/nonexistent/libnvidia-ml.so.1"));
    SystemData d = s->TakeData();
    EXPECT_TRUE(d.gpus.empty());
    ASSERT_FALSE(d.notes.empty());
    EXPECT_EQ(d.notes[0].rfind("GPU: cannot load NVML (/nonexistent/libnvidia-ml.so.1): ", 0), 0u)
        << d.notes[0];
    EXPECT_EQ(d.notes[0].find('\n'), std::string::npos);
  }
  FakeNvml nvml;
  nvml.Reset(1);
  nvml.InitError(9);
  auto s = SystemSampler::Create(Options(root, clock, TRAINPROF_FAKE_NVML));
  SystemData d = s->TakeData();
  ASSERT_FALSE(d.notes.empty());
  EXPECT_EQ(d.notes[0], fmt::format("GPU: NVML ({}) did not initialise: Driver Not Loaded (error "
                                    "9); GPU figures are not sampled (no NVIDIA driver here)",
                                    TRAINPROF_FAKE_NVML));
  nvml.Reset(0);
  auto none = SystemSampler::Create(Options(root, clock, TRAINPROF_FAKE_NVML));
  EXPECT_EQ(none->TakeData().notes[0], "GPU: NVML sees no GPU; GPU figures are not sampled");
}

TEST(SystemSampler, PcieIsReadOnlyAsOftenAsItsTwentyMillisecondsAllow) {
  FakeNvml nvml;
  nvml.TwoGpus();
  FakeRoot root;
  FakeClock clock;
  SamplerOptions o = Options(root, clock, TRAINPROF_FAKE_NVML);
  o.interval_s = 0.1;  // 2 GPUs x 2 counters x 20 ms = 80 ms: every 4th sample fits in 25 %
  auto s = SystemSampler::Create(o);
  for (int i = 0; i < 9; ++i) {
    s->SampleOnce();
    clock.ns += 100'000'000;
  }
  EXPECT_EQ(nvml.PcieCalls(), 3 * 4);  // samples 0, 4 and 8; 2 GPUs x 2 counters each
  SystemData d = s->TakeData();
  EXPECT_TRUE(std::isnan(Value(d, "gpu0_pcie_tx_bytes_per_s", 0)));
  EXPECT_DOUBLE_EQ(Value(d, "gpu0_pcie_tx_bytes_per_s", 3), 1e6);
}

// docs/system-report.md defines every figure and gives MLflow's name for it: each column's key
// and MLflow name (with the GPU, core or interface written <N> / <if>) must be there, together.
TEST(SystemSampler, EveryFigureAndItsMlflowNameAreDocumented) {
  FakeNvml nvml;
  nvml.TwoGpus();
  FakeRoot root;
  FakeClock clock;
  auto s = SystemSampler::Create(Options(root, clock, TRAINPROF_FAKE_NVML));
  const std::string doc = testutil::ReadText(testutil::SourceDir() + "/docs/system-report.md");
  auto general = [](std::string name) {
    name = std::regex_replace(name, std::regex("^cpu[0-9]+_"), "cpu<N>_");
    name = std::regex_replace(name, std::regex("^gpu[0-9]+_"), "gpu<N>_");
    name = std::regex_replace(name, std::regex("^system/gpu_[0-9]+_"), "system/gpu_<N>_");
    return std::regex_replace(name, std::regex("^net_(lo|eth0)_"), "net_<if>_");
  };
  for (const SeriesColumn& c : s->columns()) {
    const std::string key = "`" + general(c.key) + "`";
    EXPECT_NE(doc.find(key), std::string::npos) << key << " is not in docs/system-report.md";
    if (c.mlflow.empty()) continue;
    const std::string row = "| `" + general(c.mlflow) + "` | " + key + " |";
    EXPECT_NE(doc.find(row), std::string::npos) << "no MLflow mapping row " << row;
  }
}

// ---- the thread, on this machine ----------------------------------------------------------

TEST(SystemSampler, ThreadSamplesThisMachineUntilStopped) {
  SamplerOptions o;
  o.nvml_library = "";
  o.disk_path = testutil::FreshTempDir();
  o.interval_s = 0.05;
  auto s = SystemSampler::Create(o);
  s->Start();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  s->Stop();
  s->Stop();  // twice is fine
  SystemData d = s->TakeData();
  EXPECT_GE(d.t_ns.size(), 3u);
  EXPECT_GT(d.wall_s, 0.25);
  EXPECT_GT(d.thread_cpu_s, 0);
  EXPECT_GT(d.sample_mean_s, 0);
  const double rss = Value(d, "process_rss_bytes", d.t_ns.size() - 1);
  EXPECT_GT(rss, 1 << 20) << "this test binary's own RSS";
  EXPECT_GE(Value(d, "process_threads", 0), 2) << "the test thread and the sampler";
  for (const report::Diagnostic& x : d.diagnostics) ADD_FAILURE() << x.message;
}

TEST(SystemSampler, StopRightAfterStartStillLeavesConsistentData) {
  SamplerOptions o;
  o.nvml_library = "";
  o.interval_s = 3600;
  auto s = SystemSampler::Create(o);
  s->Start();
  s->Stop();
  SystemData d = s->TakeData();
  EXPECT_EQ(d.values.size(), d.t_ns.size() * d.columns.size());
}

// ---- the report section -------------------------------------------------------------------

TEST(SystemReport, SectionTablesEnergyAndCounterTracks) {
  FakeNvml nvml;
  nvml.TwoGpus();
  FakeRoot root;
  FakeClock clock;
  auto s = SystemSampler::Create(Options(root, clock, TRAINPROF_FAKE_NVML));
  s->SampleOnce();
  root.Advance();
  nvml.Set(0, "energy_mj", 1e6 + 100000);
  nvml.Set(1, "energy_mj", 1e6 + 20000);
  clock.ns += 1'000'000'000;
  s->SampleOnce();
  SystemData d = s->TakeData();
  report::Report r;
  AddSystemSection(d, /*training_samples=*/1000, r);
  const report::Section* sec = r.FindSection("system");
  ASSERT_NE(sec, nullptr);
  auto metric = [&](const std::string& key) -> report::Value {
    for (const report::Metric& m : sec->metrics) {
      if (m.key == key) return m.value;
    }
    ADD_FAILURE() << "no metric " << key;
    return {};
  };
  // 80 J of CPU (RAPL) + 100 J + 20 J of GPUs.
  EXPECT_DOUBLE_EQ(std::get<double>(metric("energy_total_j")), 200.0);
  EXPECT_DOUBLE_EQ(std::get<double>(metric("energy_total_wh")), 200.0 / 3600);
  EXPECT_DOUBLE_EQ(std::get<double>(metric("energy_per_training_sample_j")), 0.2);
  EXPECT_EQ(std::get<int64_t>(metric("samples")), 1);

  std::map<std::string, const report::Table*> tables;
  for (const report::Table& t : sec->tables) tables[t.id] = &t;
  ASSERT_TRUE(tables.count("system_report"));
  ASSERT_TRUE(tables.count("system_detail"));
  ASSERT_TRUE(tables.count("energy"));
  ASSERT_TRUE(tables.count("gpus"));
  ASSERT_TRUE(tables.count("system_timeseries"));
  const report::Table& sum = *tables["system_report"];
  EXPECT_EQ(sum.row_units.size(), sum.rows.size());
  bool saw_gpu_util = false;
  for (size_t i = 0; i < sum.rows.size(); ++i) {
    if (std::get<std::string>(sum.rows[i][1]) != "gpu0_utilization_percent") continue;
    saw_gpu_util = true;
    EXPECT_EQ(std::get<std::string>(sum.rows[i][2]), "percent");
    EXPECT_DOUBLE_EQ(std::get<double>(sum.rows[i][3]), 90);  // mean
    EXPECT_EQ(sum.row_units[i], report::Unit::kPercent);
  }
  EXPECT_TRUE(saw_gpu_util);
  EXPECT_EQ(tables["system_detail"]->rows.size(), 2u + 4u);  // 2 cores, 2 x (lo, eth0)
  const report::Table& energy = *tables["energy"];
  ASSERT_EQ(energy.rows.size(), 3u);
  EXPECT_DOUBLE_EQ(std::get<double>(energy.footer[0][2]), 200.0);
  const report::Table& ts = *tables["system_timeseries"];
  ASSERT_EQ(ts.rows.size(), 1u);
  EXPECT_EQ(ts.columns.size(), d.columns.size() + 1);
  EXPECT_DOUBLE_EQ(std::get<double>(ts.rows[0][0]), 1.0);

  std::vector<CounterTrack> tracks = CounterTracks(d);
  std::map<std::string, double> first;
  for (const CounterTrack& t : tracks) first[t.name] = t.values.at(0);
  EXPECT_DOUBLE_EQ(first.at("CPU utilization (all cores) (%)"), 15.0);
  EXPECT_DOUBLE_EQ(first.at("GPU 1 memory used (MiB)"), 40e9 / (1 << 20));
  EXPECT_DOUBLE_EQ(first.at("GPU 0 power (W)"), 350);
  EXPECT_EQ(first.count("CPU 0 utilization (%)"), 0u) << "per-core figures are not tracks";
}

TEST(SystemReport, NoSampleIsAFinding) {
  SystemData d;
  d.interval_s = 1;
  report::Report r;
  AddSystemSection(d, 0, r);
  const report::Section* sec = r.FindSection("system");
  ASSERT_EQ(sec->findings.size(), 1u);
  EXPECT_EQ(sec->findings[0].text,
            "no system sample was taken: the run ended before the first one");
}

// ---- AMD GPUs through the fake ROCm SMI -----------------------------------------------------

class FakeRocmSmi {
 public:
  FakeRocmSmi() : h_(dlopen(TRAINPROF_FAKE_ROCM_SMI, RTLD_NOW | RTLD_LOCAL)) {
    EXPECT_NE(h_, nullptr) << dlerror();
  }
  ~FakeRocmSmi() { dlclose(h_); }
  void Reset(int devices) { Fn<void(int)>("fake_rsmi_reset")(devices); }
  void AddProcess(unsigned pid, uint64_t vram, unsigned cu) {
    Fn<void(uint32_t, uint64_t, uint32_t)>("fake_rsmi_add_process")(pid, vram, cu);
  }
  void PowerError(int rc) { Fn<void(int)>("fake_rsmi_set_power_error")(rc); }

 private:
  template <typename F>
  F* Fn(const char* name) {
    return reinterpret_cast<F*>(dlsym(h_, name));
  }
  void* h_;
};

// The data of a baseline and one sample `ns` later.
SystemData TwoSamples(std::unique_ptr<SystemSampler> s, FakeClock& clock, int64_t ns) {
  s->SampleOnce();
  clock.ns += ns;
  s->SampleOnce();
  return s->TakeData();
}

SamplerOptions WithRocm(SamplerOptions o) {
  o.rocm_smi_library = TRAINPROF_FAKE_ROCM_SMI;
  o.per_process = true;
  return o;
}

// Two MI300X, our process on one and another user's on the other: the same columns as NVML's,
// the energy counter, and only the sampled tree's GPU memory.
TEST(SystemSamplerRocm, TwoAmdGpusAndOneProcessOnEach) {
  FakeRocmSmi rsmi;
  rsmi.Reset(2);
  const auto self = static_cast<unsigned>(getpid());
  rsmi.AddProcess(self, 8ull << 30, 40);
  rsmi.AddProcess(4000000, 4ull << 30, 90);  // another user's job
  FakeRoot root;
  FakeClock clock;
  SystemData d =
      TwoSamples(SystemSampler::Create(WithRocm(Options(root, clock))), clock, 2'000'000'000);
  ASSERT_EQ(d.gpus.size(), 2u);
  EXPECT_EQ(d.gpus[1].name, "AMD Instinct MI300X");
  EXPECT_EQ(d.gpus[1].index, 1);
  EXPECT_DOUBLE_EQ(d.gpus[0].memory_total_bytes, 192.0 * (1 << 30));
  EXPECT_DOUBLE_EQ(d.gpus[0].power_limit_w, 750);
  EXPECT_DOUBLE_EQ(Value(d, "gpu0_utilization_percent"), 60);
  EXPECT_DOUBLE_EQ(Value(d, "gpu1_utilization_percent"), 70);
  EXPECT_DOUBLE_EQ(Value(d, "gpu0_memory_bandwidth_percent"), 25);
  EXPECT_DOUBLE_EQ(Value(d, "gpu1_memory_used_bytes"), 24.0 * (1 << 30));
  EXPECT_DOUBLE_EQ(Value(d, "gpu1_memory_used_percent"), 12.5);
  EXPECT_DOUBLE_EQ(Value(d, "gpu1_power_w"), 500);
  EXPECT_NEAR(Value(d, "gpu0_power_percent"), 100.0 * 400 / 750, 1e-9);
  EXPECT_DOUBLE_EQ(Value(d, "gpu1_temperature_c"), 51);
  EXPECT_TRUE(std::isnan(Value(d, "gpu0_sm_clock_mhz")));  // not read from ROCm SMI
  EXPECT_DOUBLE_EQ(Value(d, "gpu0_energy_j"), 15.25);      // 1,000,000 counts of 15.25 µJ
  EXPECT_DOUBLE_EQ(Value(d, "gpu_avg_utilization_percent"), 65);
  EXPECT_DOUBLE_EQ(Value(d, "process_gpu_memory_bytes"), 8.0 * (1 << 30));
  EXPECT_DOUBLE_EQ(Value(d, "process_gpu_util_percent"), 40);
  const auto it = std::ranges::find(d.processes, static_cast<int64_t>(self), &ProcessStats::pid);
  ASSERT_NE(it, d.processes.end());
  EXPECT_DOUBLE_EQ(it->peak_gpu_memory_bytes, 8.0 * (1 << 30));
  EXPECT_EQ(std::ranges::count(d.processes, int64_t{4000000}, &ProcessStats::pid), 0);
  ASSERT_EQ(d.energy.size(), 3u);  // the CPU first, then the GPUs
  EXPECT_EQ(d.energy[2].device, "GPU 1: AMD Instinct MI300X");
  EXPECT_EQ(d.energy[2].source, "ROCm SMI energy counter");
  EXPECT_DOUBLE_EQ(d.energy[2].joules, 15.25);
  // NVML switched off says so, but with AMD GPUs found, no "no GPU" note of ROCm's.
  for (const std::string& n : d.notes) EXPECT_EQ(n.find("AMD GPU"), std::string::npos) << n;
}

// NVIDIA and AMD GPUs in one machine: NVML's come first, ROCm SMI's are numbered after them.
TEST(SystemSamplerRocm, NvmlAndRocmGpusShareOneNumbering) {
  FakeNvml nvml;
  nvml.TwoGpus();
  FakeRocmSmi rsmi;
  rsmi.Reset(2);
  FakeRoot root;
  FakeClock clock;
  SystemData d =
      TwoSamples(SystemSampler::Create(WithRocm(Options(root, clock, TRAINPROF_FAKE_NVML))), clock,
                 1'000'000'000);
  ASSERT_EQ(d.gpus.size(), 4u);
  EXPECT_EQ(d.gpus[2].name, "AMD Instinct MI300X");
  EXPECT_EQ(d.gpus[2].index, 2);
  EXPECT_DOUBLE_EQ(Value(d, "gpu0_utilization_percent"), 90);  // NVML's
  EXPECT_DOUBLE_EQ(Value(d, "gpu3_utilization_percent"), 70);  // ROCm SMI's second
  EXPECT_DOUBLE_EQ(Value(d, "gpu_avg_utilization_percent"), (90 + 50 + 60 + 70) / 4.0);
}

TEST(SystemSamplerRocm, AbsentLibraryIsOneNoteAndUnsupportedPowerIsInfo) {
  FakeRoot root;
  FakeClock clock;
  SamplerOptions o = Options(root, clock);
  o.rocm_smi_library = "/nonexistent/librocm_smi64.so";
  SystemData none = SystemSampler::Create(o)->TakeData();
  const std::string want = "AMD GPU figures unavailable: librocm_smi64 not found";
  EXPECT_EQ(std::ranges::count_if(none.notes,
                                  [&](const std::string& n) {
                                    return n.rfind(want, 0) == 0 &&
                                           n.find('\n') == std::string::npos;
                                  }),
            1);
  FakeRocmSmi rsmi;
  rsmi.Reset(1);
  rsmi.PowerError(2);  // RSMI_STATUS_NOT_SUPPORTED
  SystemData d =
      TwoSamples(SystemSampler::Create(WithRocm(Options(root, clock))), clock, 1'000'000'000);
  EXPECT_TRUE(std::isnan(Value(d, "gpu0_power_w")));
  EXPECT_DOUBLE_EQ(Value(d, "gpu0_energy_j"), 15.25);  // the counter still works
  const report::Diagnostic* info =
      testutil::FindDiagnostic(d.diagnostics, "gpu_figure_not_supported");
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->message, "GPU 0 does not report its power (ROCm SMI: not supported)");
  EXPECT_EQ(testutil::FindDiagnostic(d.diagnostics, "rocm_smi_error"), nullptr);
}

// A source of the test's own, added to the list: its column is there, filled every sample, and
// its note is said.
TEST(SystemSamplerSources, ANewSourceIsOneEntryInTheList) {
  class Answer : public Source {
   public:
    std::string why_not() const override { return "Answer: only one figure"; }
    void AddColumns(std::vector<SeriesColumn>& cols) override {
      cols.push_back({"answer", "The answer", report::Unit::kNumber, false, false, ""});
    }
    void Read(const SampleRow& row) override { row.values[row.first] = 42 + row.dt_s; }
  };
  std::vector<SourceEntry>& list = SamplerSources();
  std::vector<std::string> names;
  for (const SourceEntry& e : list) names.push_back(e.name);
  EXPECT_EQ(names, (std::vector<std::string>{"host (/proc, /sys)", "NVML", "ROCm SMI",
                                             "GPU summary", "RAPL"}));
  list.push_back({"answer", [](const SourceContext&) -> std::unique_ptr<Source> {
                    return std::make_unique<Answer>();
                  }});
  FakeRoot root;
  FakeClock clock;
  auto s = SystemSampler::Create(Options(root, clock));
  list.pop_back();
  SystemData d = TwoSamples(std::move(s), clock, 1'000'000'000);
  EXPECT_EQ(d.Find("answer"), static_cast<int>(d.columns.size()) - 1);  // after RAPL's
  EXPECT_DOUBLE_EQ(Value(d, "answer"), 43);
  EXPECT_EQ(std::ranges::count(d.notes, std::string("Answer: only one figure")), 1);
}

}  // namespace
}  // namespace trainprof::system
