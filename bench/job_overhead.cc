// Profiling cost on the real job: step time of `trainprof profile`'s training job under each
// profiling mode, in one process, the modes rotated every round (ABC, BCA, CAB, ...) so drift
// cancels.
//
//   trainprof_job_overhead [--rounds 10] [--batches 200] [--compare scopes|ops|live]
//
// --compare scopes (default): the time and speed reports on vs the profiler off (every scope
//   then costs one branch).
// --compare ops: no profiler vs trainprof's operator observer (memory.enabled on every step,
//   with input shapes and allocations) vs LibTorch's own profiler collecting the same
//   (torch::autograd::profiler legacy, report_input_shapes and profile_memory on).
// --compare live: the time and speed reports with the live view off vs on (live.mode lines,
//   a snapshot a second with the split, CPU and RSS; its lines go to stderr).
// Prints the median step time of each mode and its overhead against the profiler off.
#include <fmt/format.h>
#include <torch/csrc/autograd/profiler_legacy.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "jobs/fashion_mnist_job.h"
#include "jobs/job_config.h"

namespace {

using namespace trainprof;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

enum class Mode { kOff, kScopes, kOperators, kLibTorch, kLive };
const char* ModeName(Mode m) {
  switch (m) {
    case Mode::kOff:
      return "profiler off";
    case Mode::kScopes:
      return "time + speed reports";
    case Mode::kOperators:
      return "trainprof operator observer";
    case Mode::kLibTorch:
      return "LibTorch profiler (legacy)";
    case Mode::kLive:
      return "reports + live view";
  }
  return "";
}

// Seconds per step of one run, or a negative value on error.
double RunOnce(const jobs::JobConfig& base, const jobs::FashionMnistData& data, Mode mode,
               const std::string& dir) {
  jobs::JobConfig cfg = base;
  Options& o = cfg.profiler;
  o.time.enabled = o.speed.enabled = mode == Mode::kScopes || mode == Mode::kLive;
  o.live.mode = mode == Mode::kLive ? "lines" : "off";
  o.memory.enabled = mode == Mode::kOperators;
  o.memory.warmup = 0;
  o.memory.steps = int64_t{1} << 40;  // every step
  o.memory.record_shapes = true;
  o.model_summary.enabled = false;
  o.system.enabled = false;
  o.output.run_dir = dir;
  o.output.overwrite = true;  // every round writes the same scratch folder
  o.output.print = false;
  auto session = Session::Create(o);
  if (!session.ok()) {
    fmt::print(stderr, "error: {}\n", session.status().ToString());
    return -1;
  }
  namespace prof = torch::autograd::profiler;
  if (mode == Mode::kLibTorch) {
    prof::enableProfilerLegacy(prof::ProfilerConfig(prof::ProfilerState::CPU,
                                                    /*report_input_shapes=*/true,
                                                    /*profile_memory=*/true));
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto result = jobs::RunFashionMnist(cfg, data, **session);
  const auto t1 = std::chrono::steady_clock::now();
  if (mode == Mode::kLibTorch) (void)prof::disableProfilerLegacy();
  Status fin = (*session)->Finish();
  std::filesystem::remove_all(dir);
  if (!result.ok() || !fin.ok()) {
    fmt::print(stderr, "error: {}\n", result.ok() ? fin.ToString() : result.status().ToString());
    return -1;
  }
  const int64_t steps = result->train_steps + result->val_steps;
  return std::chrono::duration<double>(t1 - t0).count() / static_cast<double>(steps);
}

}  // namespace

int main(int argc, char** argv) {
  int64_t rounds = 10, batches = 200;
  std::string compare = "scopes";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--rounds") == 0 || std::strcmp(argv[i], "--pairs") == 0) {
      rounds = std::atoll(argv[i + 1]);
    } else if (std::strcmp(argv[i], "--batches") == 0) {
      batches = std::atoll(argv[i + 1]);
    } else if (std::strcmp(argv[i], "--compare") == 0) {
      compare = argv[i + 1];
    } else {
      fmt::print(stderr, "usage: {} [--rounds N] [--batches N] [--compare scopes|ops|live]\n",
                 argv[0]);
      return 2;
    }
  }
  std::vector<Mode> modes;
  if (compare == "scopes") {
    modes = {Mode::kScopes, Mode::kOff};
  } else if (compare == "live") {
    modes = {Mode::kScopes, Mode::kLive};
  } else if (compare == "ops") {
    modes = {Mode::kOff, Mode::kOperators, Mode::kLibTorch};
  } else {
    fmt::print(stderr, "error: --compare must be scopes, ops or live, got '{}'\n", compare);
    return 2;
  }
  jobs::JobConfig cfg;
  base::ConfigSchema schema;
  jobs::AddJobKeys(schema, cfg);
  if (Status s = jobs::ApplyDefaultConfig(schema); !s.ok()) {
    fmt::print(stderr, "error: {}\n", s.ToString());
    return 1;
  }
  cfg.training.epochs = 1;
  cfg.training.limit_train_batches = batches;
  cfg.training.limit_val_batches = 2;
  cfg.training.progress = "off";
  auto data = jobs::LoadData(cfg.data);
  if (!data.ok()) {
    fmt::print(stderr, "error: {}\n", data.status().ToString());
    return 1;
  }
  const std::string dir = fmt::format("/tmp/trainprof_overhead_{}", getpid());
  for (Mode m : modes) RunOnce(cfg, *data, m, dir);  // warm-up: page cache, allocator, kernels
  const size_t n = modes.size();
  std::vector<std::vector<double>> times(n), ratios(n);
  // The index of the mode the others are measured against.
  const size_t off = compare == "scopes" ? 1 : 0;
  for (int64_t r = 0; r < rounds; ++r) {
    std::vector<double> t(n);
    for (size_t k = 0; k < n; ++k) {
      const size_t m = (static_cast<size_t>(r) + k) % n;
      t[m] = RunOnce(cfg, *data, modes[m], dir);
      if (t[m] < 0) return 1;
    }
    std::string line = fmt::format("round {:2}:", r);
    for (size_t m = 0; m < n; ++m) {
      times[m].push_back(t[m]);
      ratios[m].push_back(t[m] / t[off]);
      line += fmt::format("  {} {:.4f} ms/step", ModeName(modes[m]), t[m] * 1e3);
    }
    fmt::print("{}\n", line);
  }
  for (size_t m = 0; m < n; ++m) {
    fmt::print("{:<28} median {:.4f} ms/step", ModeName(modes[m]), Median(times[m]) * 1e3);
    if (m != off) {
      fmt::print(", median ratio to {} {:.4f} => overhead {:+.2f} %", ModeName(modes[off]),
                 Median(ratios[m]), (Median(ratios[m]) - 1) * 100);
    }
    fmt::print("\n");
  }
  return 0;
}
